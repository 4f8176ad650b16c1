// Command bot runs Switchboard.
//
//	bot chat                 talk to the bot in this terminal (no setup needed)
//	bot run [-c FILE]        production: the configured platforms, workers and HTTP endpoints
//	bot check-config [-c F]  print the effective configuration (secrets redacted) and its problems
//	bot version              print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/switchboard-bot/switchboard/config"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise the module version.
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ()))
}

const usage = `usage: bot <command> [flags]

commands:
  chat           talk to the bot in this terminal (embedded store; demo model without a key)
  run            serve the configured platforms (config: -c FILE or BOT_CONFIG, plus BOT_ env)
  check-config   print the effective configuration with secrets redacted, and every problem
  version        print the version
`

// run is the whole command line; SIGTERM cancels the command's context, and so does SIGINT
// except in `bot chat`, which takes Ctrl-C itself (catchInterrupts).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx, stopInterrupts := catchInterrupts(ctx)
	defer stopInterrupts()
	return runContext(ctx, args, stdin, stdout, stderr, environ)
}

// runContext is run with the context the command runs under: `bot run` and `bot chat` serve
// until ctx ends, then drain and return 0 (tests cancel ctx instead of sending a signal).
func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	fs := flag.NewFlagSet("bot "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("c", "", "configuration file (YAML); BOT_CONFIG when empty")
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	switch cmd {
	case "version":
		fmt.Fprintln(stdout, "switchboard", versionString())
		return 0
	case "check-config":
		return checkConfig(*cfgPath, environ, stdout, stderr)
	case "chat":
		cfg, code := loadConfig(*cfgPath, environ, stderr)
		if cfg == nil {
			return code
		}
		return exitCode(chat(ctx, cfg, stdin, stdout, stderr, chatInterrupts(ctx)), stderr)
	case "run":
		cfg, code := loadConfig(*cfgPath, environ, stderr)
		if cfg == nil {
			return code
		}
		return exitCode(serve(ctx, cfg, stderr), stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "bot: unknown command %q\n\n%s", cmd, usage)
	return 2
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, context.Canceled) {
		return 0
	}
	fmt.Fprintln(stderr, "bot:", err)
	return 1
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// loadConfig loads and validates; on failure it prints every problem and returns nil and the
// exit code.
func loadConfig(path string, environ []string, stderr io.Writer) (*config.Config, int) {
	cfg, err := config.Load(path, environ)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		fmt.Fprintln(stderr, "bot: configuration:", err)
		return nil, 2
	}
	return cfg, 0
}

func checkConfig(path string, environ []string, stdout, stderr io.Writer) int {
	cfg, err := config.Load(path, environ)
	if err != nil {
		var ve *config.ValidationError
		if !errors.As(err, &ve) || cfg == nil {
			fmt.Fprintln(stderr, "bot: configuration:", err)
			return 2
		}
	}
	fmt.Fprint(stdout, cfg.Redacted())
	if verr := cfg.Validate(); verr != nil || err != nil {
		if err != nil {
			fmt.Fprintln(stderr, err)
		}
		if verr != nil {
			fmt.Fprintln(stderr, verr)
		}
		return 1
	}
	fmt.Fprintln(stderr, "configuration OK")
	return 0
}

// newLogger writes text or JSON logs at the configured level to w.
func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
