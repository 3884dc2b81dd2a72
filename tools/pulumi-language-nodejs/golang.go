package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// goOptions mirrors the `runtime.options` a Pulumi.yaml may set for go.
type goOptions struct {
	// binary: a prebuilt program to run instead of building one.
	binary string
	// buildTarget: where `go build` writes the program (kept); else a temporary file (removed).
	buildTarget string
}

func parseGoOptions(root string, opts map[string]any) (goOptions, error) {
	var g goOptions
	for name, dst := range map[string]*string{"binary": &g.binary, "buildTarget": &g.buildTarget} {
		v, ok := opts[name]
		if !ok {
			continue
		}
		s, isString := v.(string)
		if !isString {
			return g, fmt.Errorf("runtime option '%s' must be a string", name)
		}
		*dst = s
	}
	if g.binary != "" && g.buildTarget != "" {
		return g, errors.New("binary and buildTarget cannot both be specified")
	}
	if g.buildTarget != "" && !filepath.IsAbs(g.buildTarget) {
		g.buildTarget = filepath.Join(root, g.buildTarget)
	}
	return g, nil
}

// buildGoProgram runs `go build` in the program directory, as Go's own host does, and returns
// the binary's path. The compiler's output goes to the user.
func buildGoProgram(ctx context.Context, programDir, out string) (string, error) {
	if matches, _ := filepath.Glob(filepath.Join(programDir, "*.go")); len(matches) == 0 {
		return "", fmt.Errorf("no Go files in %s for `go build`", programDir)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("could not find go on the $PATH: %w", err)
	}
	if out == "" {
		f, err := os.CreateTemp("", "pulumi-go.*")
		if err != nil {
			return "", fmt.Errorf("creating the program's temporary file: %w", err)
		}
		f.Close()
		out = f.Name()
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-buildvcs=false", "-trimpath", "-ldflags", "-w -s", "-o", out)
	cmd.Dir = programDir
	cmd.Stdout = struct{ io.Writer }{os.Stdout}
	cmd.Stderr = struct{ io.Writer }{os.Stderr}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("error in compiling Go: unable to run `go build`: %w", err)
	}
	return out, nil
}

func (h *languageHost) runGo(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	fail := func(err error) (*pulumirpc.RunResponse, error) {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	info := req.GetInfo()
	if info == nil {
		return fail(errors.New("the engine sent no program information; this host needs Pulumi 3.100 or later"))
	}
	opts, err := parseGoOptions(info.GetRootDirectory(), info.GetOptions().AsMap())
	if err != nil {
		return fail(err)
	}

	// The Go SDK reads what the engine asks from the environment.
	config, err := json.Marshal(nonNil(req.GetConfig()))
	if err != nil {
		return fail(fmt.Errorf("serializing config: %w", err))
	}
	secretKeys, err := json.Marshal(nonNilSlice(req.GetConfigSecretKeys()))
	if err != nil {
		return fail(fmt.Errorf("serializing secret config keys: %w", err))
	}
	env := os.Environ()
	setIfNotEmpty := func(k, v string) {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	setIfNotEmpty(pulumi.EnvOrganization, req.GetOrganization())
	setIfNotEmpty(pulumi.EnvProject, req.GetProject())
	setIfNotEmpty(pulumi.EnvPulumiRootDirectory, info.GetRootDirectory())
	setIfNotEmpty(pulumi.EnvStack, req.GetStack())
	setIfNotEmpty(pulumi.EnvConfig, string(config))
	setIfNotEmpty(pulumi.EnvConfigSecretKeys, string(secretKeys))
	setIfNotEmpty(pulumi.EnvDryRun, strconv.FormatBool(req.GetDryRun()))
	setIfNotEmpty(pulumi.EnvParallel, strconv.Itoa(int(req.GetParallel())))
	setIfNotEmpty(pulumi.EnvMonitor, req.GetMonitorAddress())
	setIfNotEmpty(pulumi.EnvEngine, h.engine())

	runCtx, stop := context.WithCancel(h.cancelCtx)
	defer stop()
	context.AfterFunc(ctx, stop)

	program := opts.binary
	if program != "" {
		if program, err = exec.LookPath(program); err != nil {
			return fail(fmt.Errorf("unable to find '%s' executable: %w", opts.binary, err))
		}
	} else {
		if program, err = buildGoProgram(runCtx, info.GetProgramDirectory(), opts.buildTarget); err != nil {
			return fail(err)
		}
		if opts.buildTarget == "" {
			defer os.Remove(program)
		}
	}

	cmd := exec.CommandContext(runCtx, program)
	cmd.Dir = req.GetPwd()
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout = struct{ io.Writer }{os.Stdout}
	cmd.Stderr = struct{ io.Writer }{os.Stderr}
	return exitResponse(cmd.Run(), "the Go program")
}
