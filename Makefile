# The project's commands. `make test` is what CI runs (.ci/run) and what the README names.
GO ?= go
STATICCHECK_VERSION := v0.8.2
PKGS := ./...

.PHONY: test lint fmt-check vet staticcheck unit bench build fuzz

## test: every check CI runs — formatting, vet, staticcheck, and the race-enabled test suite.
test: lint unit

## lint: gofmt check, go vet and a pinned staticcheck.
lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

unit:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## bench: every benchmark once, with memory figures.
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## build: the bot binary into bin/bot.
build:
	$(GO) build -o bin/bot ./cmd/bot
