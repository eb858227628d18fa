# Airlock. The two set-up commands are `make run` and `make test`.
GO      ?= go
BIN     ?= bin/airlock
ADDR    ?= 127.0.0.1:8080
# Integration tests start containers and redis-server processes; keep the
# package count in flight low on small machines.
TESTFLAGS ?= -race -count=1 -timeout 25m -p 2
# TEST_FIRST starts before the rest (go test starts packages in the order
# given). The suite is CPU-bound on two cores; the sandbox package, mostly
# serial tests, ran last and alone for six minutes with a third of the CPU
# idle. Started first, it runs beside the others.
TEST_FIRST ?= ./sandbox

.PHONY: build images images-service run test test-busy test-unit vet tidy-check deps-run deps-test fmt bench compose-config compose-images compose-up compose-down clean

build:
	$(GO) build -o $(BIN) ./cmd/airlock

images:
	bash images/build.sh python shell

images-service:
	bash images/build.sh service

# scripts/deps.sh installs what is missing (debootstrap; for the tests
# redis-server and chromium) or prints the one command to run.
deps-run:
	@GO=$(GO) bash scripts/deps.sh run

deps-test:
	@GO=$(GO) bash scripts/deps.sh test

# The prerequisites are ordered: deps first, then the build steps.
run: deps-run
	@$(MAKE) --no-print-directory build images
	$(BIN) serve --insecure-local --addr $(ADDR)

# VETFLAGS: `make test` vets with -race, so vet and the tests share one
# compilation of every package (a second full build on a fresh machine).
VETFLAGS ?=
vet: tidy-check
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(VETFLAGS) ./...

tidy-check:
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }

# The compose test's service base (debootstrap, minutes on a first run) is
# built beside the sandbox images, with its progress shown, not in the e2e run.
test: deps-test
	@$(MAKE) --no-print-directory -j2 images images-service
	@$(MAKE) --no-print-directory vet VETFLAGS=-race
	$(GO) test $(TESTFLAGS) $(TEST_FIRST) ./...

# The suite on a busy machine: the tests of BUSY_PKGS (default all) beside a
# CPU hog keeping every core busy (scripts/busy.sh), with every timing bound
# stretched by AIRLOCK_TEST_SCALE (internal/testscale; 3 unless set) and a
# longer -timeout. CI runs every package but e2e this way after `make test`.
BUSY_PKGS ?= ./...
BUSY_TESTFLAGS ?= -race -count=1 -timeout 50m -p 2
test-busy:
	AIRLOCK_TEST_SCALE=$${AIRLOCK_TEST_SCALE:-3} bash scripts/busy.sh $(GO) test $(BUSY_TESTFLAGS) $(BUSY_PKGS)

test-unit:
	$(GO) test -short -count=1 ./...

bench: build images
	bash scripts/bench.sh

# The compose stack's offline images: airlock/server (the static binary
# built here on the service base), airlock/redis and airlock/haproxy, all
# from the Debian mirror like the sandbox images; no registry needed.
compose-images:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/airlock-static ./cmd/airlock
	AIRLOCK_SERVER_BIN=bin/airlock-static bash images/build.sh server redis haproxy

compose-up: compose-images
	docker-compose up -d

compose-down:
	docker-compose down -v

compose-config:
	docker-compose -f docker-compose.yml config -q
	@if docker compose version >/dev/null 2>&1; then docker compose -f docker-compose.yml config -q; fi

clean:
	rm -rf bin
