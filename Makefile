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

## fuzz: every fuzz target for FUZZTIME each (default 10s). New inputs that widen coverage are
## copied into the target's testdata/fuzz/<Fuzz…>/ corpus (kept in git: `go test` replays them
## as seeds on every run); an input that fails stays there too, and the run stops at the first.
FUZZTIME ?= 10s
fuzz:
	@set -e; cache=$$($(GO) env GOCACHE)/fuzz; \
	for pkg in $$($(GO) list $(PKGS)); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz: $$pkg $$target ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg; \
	    if [ -d "$$cache/$$pkg/$$target" ]; then \
	      mkdir -p "$$dir/testdata/fuzz/$$target"; \
	      cp -n "$$cache/$$pkg/$$target"/* "$$dir/testdata/fuzz/$$target"/ 2>/dev/null || true; \
	    fi; \
	  done; \
	done
