// Command compose-check loads a compose file with compose-go, the loader docker compose
// itself uses, and exits non-zero with compose's own message when compose would refuse it.
//
// Usage: compose-check [-env KEY=VALUE ...] FILE
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
)

type envFlags []string

func (e *envFlags) String() string     { return strings.Join(*e, ",") }
func (e *envFlags) Set(v string) error { *e = append(*e, v); return nil }

func main() {
	var env envFlags
	flag.Var(&env, "env", "KEY=VALUE set for interpolation (repeatable), as a .env file would")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: compose-check [-env KEY=VALUE ...] FILE")
		os.Exit(2)
	}
	file, err := filepath.Abs(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	options, err := cli.NewProjectOptions(
		[]string{file},
		cli.WithWorkingDirectory(filepath.Dir(file)),
		cli.WithEnv(env),
		cli.WithName("compose-check"),
		// The checks `docker compose config` does: schema, references, consistency.
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := project.MarshalJSON()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
