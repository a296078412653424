# no function.py here; preRun.sh alone
