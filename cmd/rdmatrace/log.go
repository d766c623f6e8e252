package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
)

// rdmatrace's lines on stderr go through log/slog (as pwru's), one handler
// writing "rdmatrace: " and escaping what a terminal must not get.
func init() { slog.SetDefault(slog.New(termsafe.NewHandler(os.Stderr, "rdmatrace", nil))) }

// logf says a sentence on stderr, through slog's handler. Quote what comes
// from outside (a file's name, a process's) with formats.Sanitize, whose
// escapes cannot be forged; the handler is the net under it.
func logf(format string, a ...any) { slog.Info(fmt.Sprintf(format, a...)) }
