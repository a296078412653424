package main

import "minik8s/cluster"

var _ = cluster.Up

func main() {}
