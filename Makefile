# Airlock. The two set-up commands are `make run` and `make test`.
GO      ?= go
BIN     ?= bin/airlock
ADDR    ?= 127.0.0.1:8080
# Integration tests start containers and redis-server processes; keep the
# package count in flight low on small machines.
TESTFLAGS ?= -race -count=1 -timeout 25m -p 2

.PHONY: build images run test test-unit vet fmt bench compose-config clean

build:
	$(GO) build -o $(BIN) ./cmd/airlock

images:
	bash images/build.sh python shell

run: build images
	$(BIN) serve --insecure-local --addr $(ADDR)

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

test: images vet
	$(GO) test $(TESTFLAGS) ./...

test-unit:
	$(GO) test -short -count=1 ./...

bench: build images
	bash scripts/bench.sh

compose-config:
	docker-compose -f docker-compose.yml config -q
	@if docker compose version >/dev/null 2>&1; then docker compose -f docker-compose.yml config -q; fi

clean:
	rm -rf bin
