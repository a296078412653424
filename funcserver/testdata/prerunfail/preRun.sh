echo "installing things"
echo "boom: no such package" >&2
exit 7
