module minik8s

go 1.26
