# minik8s — build, test, benchmark and run the cluster.
GO      ?= go
DATA    ?= ./data
PORT    ?= 8080
BENCH   ?= .
# Packages whose benchmarks `make bench` runs.
BENCH_PKGS ?= ./test/bench/...

.PHONY: all build test unit bench up clean fmt vet images

all: build

# funcserver runs inside the Debian image of function pods: build it static.
build:
	@mkdir -p bin
	$(GO) build -o bin/ ./cmd/...
	CGO_ENABLED=0 $(GO) build -o bin/funcserver ./cmd/funcserver

# The tests: unit tests beside the code, integration and end-to-end tests
# in test/, all against real etcd (embedded) and, where needed, a containerd
# the tests start themselves. MINIK8S_E2E=1 makes a missing containerd a
# failure instead of a skip. Most of test/'s parallel tests wait on
# clusters of their own more than they compute: three run at once.
test: build
	MINIK8S_E2E=1 $(GO) test -race -count=1 -parallel 3 -timeout 45m ./...

unit:
	$(GO) test -count=1 ./pkg/... ./apiserver/...

bench: build
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count=1 -timeout 60m $(BENCH_PKGS)

# Start the whole cluster in the foreground (as root); Ctrl-C stops it.
up: build
	./bin/minik8s up --port $(PORT) --data-dir $(DATA)

# Build the project's images (Debian packages via debootstrap, cached in
# /var/cache/minik8s) and import them into a node's containerd. The Python
# runtime carries funcserver, the runtime of function pods;
# minik8s/perl-example:latest is a function in another language
# (images/perl, yaml/func-image.yaml).
CONTAINERD_ADDRESS ?= ./data/containerd/containerd.sock
images: build
	./bin/mkimage --containerd-address $(CONTAINERD_ADDRESS) --add bin/funcserver:/usr/local/bin/funcserver

# go vet, then the rules of docs/design.md that go vet does not know:
# which directory may import which, who writes the function objects' status
# (hack/archcheck). ARCHCHECK_SKIP lists rules left out (comma-separated).
ARCHCHECK_SKIP ?=
vet:
	$(GO) vet ./...
	$(GO) run ./hack/archcheck -skip '$(ARCHCHECK_SKIP)'

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
