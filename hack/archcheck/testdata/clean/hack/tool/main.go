// A tool of the repository's: outside the rules.
package main

import "minik8s/apiserver"

func main() { apiserver.Serve() }
