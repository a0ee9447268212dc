GO        ?= go
BIN       := bin/fleetaudit
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# Release stamps carry the commit's date, not the build's: reproducible.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
DATE      ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
# Tools installed by version outside the repo (go install, not go.mod).
TOOLBIN   ?= $(HOME)/.cache/fleetaudit/bin
CYCLONEDX := $(TOOLBIN)/cyclonedx-gomod
ACTIONLINT := $(TOOLBIN)/actionlint
IMAGE     ?= ghcr.io/fleetaudit/fleetaudit:$(VERSION)
FUZZTIME  ?= 30s
EXAMPLE   := examples/fleet
# The race detector needs cgo, and cgo a C compiler: without one (go env
# CGO_ENABLED is 0, or go env CC is not on PATH) make test runs without -race.
# RACE=-race forces it (CI does), RACE= turns it off.
CGO_CC    := $(firstword $(shell $(GO) env CC 2>/dev/null))
RACE      ?= $(if $(and $(filter 1,$(shell $(GO) env CGO_ENABLED 2>/dev/null)),$(CGO_CC),$(shell command -v '$(CGO_CC)' 2>/dev/null)),-race)
# Each test binary's limit (go test -timeout); CI's tests may wait for a peer build.
TIMEOUT   ?= 10m

.PHONY: build test demo gate-demo bench fuzz lint docs clean release image tools actionlint

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/fleetaudit

# Everything: vet, formatting, unit, golden, fuzz seed corpora and CLI tests,
# with the race detector where a C compiler makes it available. -race goes in
# GOFLAGS so the binaries tests build with go build are race builds too: vet,
# the tests and those binaries then share one compile of every dependency.
test: lint
ifeq ($(RACE),)
	@echo "make test: no C compiler for cgo (go env CC), so no -race; install gcc to run with it"
endif
	GOFLAGS='$(strip $(GOFLAGS) $(RACE))' $(GO) test -count=1 -timeout $(TIMEOUT) ./...

# Audit the bundled example fleet (the hugetlb_cma incident among them);
# it finds hazards, so --fail-on none keeps the demo's exit status 0.
demo: build
	$(BIN) audit --inventory $(EXAMPLE)/inventory.yaml --snapshots $(EXAMPLE)/snapshots --fail-on none

# The incident as a config-repo change, stopped by the gate.
gate-demo: build
	scripts/gate-demo.sh $(BIN)

# Go benchmarks (collection per host, policy evaluation, a fleet over SSH),
# then fleetaudit and conftest side by side on two cores: 10k hosts that all
# differ (gen -unique), 10k and 100k of the default generator (conftest up to
# 10k); and collection of the live / over SSH beside Ansible and ssh (200
# hosts, 10 and 50 in flight, then behind a login shell that takes 1s).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./... | tee bench.out
	bench/fleetaudit-vs-conftest.sh unique:10000 default:10000 default:100000 | tee -a bench.out
	bench/ssh-vs-ansible.sh 200 10,50 | tee -a bench.out

# Each fuzz target for FUZZTIME (make fuzz FUZZTIME=5m).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$target"; \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME); \
	  done; \
	done

# Regenerate docs/rules.md and the parameter table of docs/fleet-profiles.md
# from the rules' METADATA and the Rego library (make test fails while stale).
docs:
	$(GO) test ./internal/docgen -count=1 -update

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(RACE) ./...

# Static, stamped, reproducible binaries for linux/amd64, linux/arm64 and
# darwin/arm64, a CycloneDX SBOM each and SHA256SUMS, in dist/.
release: $(CYCLONEDX)
	$(GO) run ./tools/release -version $(VERSION) -commit $(COMMIT) -date $(SOURCE_DATE_EPOCH) \
	  -out dist -sbom-tool $(CYCLONEDX)

# The container image (linux/amd64 and linux/arm64) as an OCI layout in
# dist/image, without a Docker daemon; push it with crane (see docs/install.md).
image:
	$(GO) run ./tools/release -version $(VERSION) -commit $(COMMIT) -date $(SOURCE_DATE_EPOCH) \
	  -out dist/image-bin -targets linux/amd64,linux/arm64
	$(GO) run ./tools/mkimage -bin dist/image-bin -tag $(IMAGE) -version $(VERSION) -commit $(COMMIT) \
	  -date $(SOURCE_DATE_EPOCH) -out dist/image

tools: $(CYCLONEDX) $(ACTIONLINT)

$(CYCLONEDX):
	GOBIN=$(TOOLBIN) $(GO) install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0

$(ACTIONLINT):
	GOBIN=$(TOOLBIN) $(GO) install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

# The GitHub Action and the example workflow, as GitHub would read them.
actionlint: $(ACTIONLINT)
	$(ACTIONLINT) .github/workflows/gate-action.yml docs/examples/fleetaudit-gate.yml

clean:
	rm -rf bin bench.out dist
