# syntax=docker/dockerfile:1
#
# Switchboard's image: one static binary, /bot, on distroless (CA certificates, no shell), run as
# a non-root user. The HEALTHCHECK is the binary itself (`bot healthcheck`).
#
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" -t switchboard .
#   docker run --rm switchboard version
#   docker compose up -d        # compose.yaml: Redis and two replicas
#
# cmd/bot/dockerfile_test.go builds the binary with this file's own `go build` line and checks it
# (static, runs as a non-root user, answers `version` and the HEALTHCHECK command): keep that
# line one plain command.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a change to the code does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/bot ./cmd/bot

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/bot /bot
# distroless's "nonroot" user, by number so that runAsNonRoot checks can verify it.
USER 65532:65532
# http.addr: /healthz, /readyz, /metrics and platform webhooks.
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=10s --start-period=20s --retries=3 CMD ["/bot", "healthcheck"]
ENTRYPOINT ["/bot"]
CMD ["run"]
