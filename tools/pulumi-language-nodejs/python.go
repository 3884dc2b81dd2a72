package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// runPython is the Python program runner: the same interpreter Python's own host picks, the
// same arguments, the program run by runpy inside the pulumi SDK's stack (run_python.py).
//
//go:embed run_python.py
var runPython string

// pythonOptions mirrors the `runtime.options` a Pulumi.yaml may set for python.
type pythonOptions struct {
	// virtualenv: a directory, relative to the project's root; empty runs the python on PATH.
	virtualenv string
	// typechecker: "mypy" or "pyright", run on the program directory before each run.
	typechecker string
}

func parsePythonOptions(opts map[string]any) (pythonOptions, error) {
	var po pythonOptions
	str := func(name string) (string, error) {
		v, ok := opts[name]
		if !ok {
			return "", nil
		}
		s, isString := v.(string)
		if !isString {
			return "", fmt.Errorf("runtime option '%s' must be a string", name)
		}
		return s, nil
	}
	var err error
	if po.virtualenv, err = str("virtualenv"); err != nil {
		return po, err
	}
	if po.typechecker, err = str("typechecker"); err != nil {
		return po, err
	}
	switch po.typechecker {
	case "", "mypy", "pyright":
	default:
		return po, fmt.Errorf("unsupported typechecker option: %s", po.typechecker)
	}
	tc, err := str("toolchain")
	if err != nil {
		return po, err
	}
	switch tc {
	case "", "pip":
	case "poetry", "uv":
		return po, fmt.Errorf("toolchain %s: this minimal host runs pip virtualenvs only", tc)
	default:
		return po, fmt.Errorf("unsupported toolchain option: %s", tc)
	}
	return po, nil
}

// pythonCommand: the interpreter for a project, and the environment it runs in. With a
// virtualenv, its python, with VIRTUAL_ENV set and its bin/ first on PATH (as `activate` does);
// else PULUMI_PYTHON_CMD, python3 or python from PATH.
func pythonCommand(root string, po pythonOptions) (string, []string, error) {
	env := os.Environ()
	if po.virtualenv == "" {
		for _, name := range []string{os.Getenv("PULUMI_PYTHON_CMD"), "python3", "python"} {
			if name == "" {
				continue
			}
			if bin, err := exec.LookPath(name); err == nil {
				return bin, env, nil
			}
		}
		return "", nil, errors.New("could not find python3 or python on the $PATH")
	}
	venv := po.virtualenv
	if !filepath.IsAbs(venv) {
		venv = filepath.Join(root, venv)
	}
	bin := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(filepath.Join(venv, "pyvenv.cfg")); err != nil {
		return "", nil, fmt.Errorf("the 'virtualenv' option in Pulumi.yaml is set to %q, but %q is not a virtual environment; "+
			"create it: python3 -m venv %s && %s -m pip install -r requirements.txt", po.virtualenv, venv, venv, bin)
	}
	kept := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PYTHONHOME=") && !strings.HasPrefix(kv, "PATH=") {
			kept = append(kept, kv)
		}
	}
	kept = append(kept, "VIRTUAL_ENV="+venv, "PATH="+filepath.Join(venv, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	return bin, kept, nil
}

// typecheck runs the project's type checker on the program directory, as `python -m <checker>`
// from the project's interpreter (mypy leaves the virtualenv out). A failure stops the run with
// the checker's output as its error; a pass says nothing (mypy's "Success: no issues found" would
// otherwise be a diagnostic on every run).
func typecheck(ctx context.Context, python string, env []string, root, programDir string, po pythonOptions) error {
	if po.typechecker == "" {
		return nil
	}
	probe := exec.CommandContext(ctx, python, "-c", "import "+po.typechecker)
	probe.Env = env
	if probe.Run() != nil {
		return fmt.Errorf("The typechecker option is set to %[1]s, but %[1]s is not installed: %[2]s -m pip install %[1]s",
			po.typechecker, python)
	}
	args := []string{"-m", po.typechecker}
	if po.typechecker == "mypy" && po.virtualenv != "" {
		venv := po.virtualenv
		if !filepath.IsAbs(venv) {
			venv = filepath.Join(root, venv)
		}
		if rel, err := filepath.Rel(programDir, venv); err == nil {
			args = append(args, "--exclude", rel)
		}
	}
	args = append(args, programDir)
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Dir = programDir
	cmd.Env = env
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s failed: %w\n%s", po.typechecker, err, out.String())
	}
	return nil
}

func (h *languageHost) runPython(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	fail := func(err error) (*pulumirpc.RunResponse, error) {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	info := req.GetInfo()
	if info == nil {
		return fail(errors.New("the engine sent no program information; this host needs Pulumi 3.100 or later"))
	}
	po, err := parsePythonOptions(info.GetOptions().AsMap())
	if err != nil {
		return fail(err)
	}
	python, env, err := pythonCommand(info.GetRootDirectory(), po)
	if err != nil {
		return fail(err)
	}

	runCtx, stop := context.WithCancel(h.cancelCtx)
	defer stop()
	context.AfterFunc(ctx, stop)

	if err := typecheck(runCtx, python, env, info.GetRootDirectory(), info.GetProgramDirectory(), po); err != nil {
		return fail(err)
	}

	args := []string{"-u", "-c", runPython}
	flagIfSet := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name, value)
		}
	}
	flagIfSet("monitor", req.GetMonitorAddress())
	flagIfSet("engine", h.engine())
	flagIfSet("project", req.GetProject())
	flagIfSet("root_directory", info.GetRootDirectory())
	flagIfSet("stack", req.GetStack())
	flagIfSet("pwd", req.GetPwd())
	flagIfSet("dry_run", strconv.FormatBool(req.GetDryRun()))
	flagIfSet("parallel", strconv.Itoa(int(req.GetParallel())))
	flagIfSet("organization", req.GetOrganization())
	entryPoint := info.GetEntryPoint()
	if entryPoint == "" {
		entryPoint = "."
	}
	args = append(args, entryPoint)
	args = append(args, req.GetArgs()...)

	config, err := json.Marshal(nonNil(req.GetConfig()))
	if err != nil {
		return fail(fmt.Errorf("serializing config: %w", err))
	}
	secretKeys, err := json.Marshal(nonNilSlice(req.GetConfigSecretKeys()))
	if err != nil {
		return fail(fmt.Errorf("serializing secret config keys: %w", err))
	}
	env = append(env, "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys))

	cmd := exec.CommandContext(runCtx, python, args...)
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout = struct{ io.Writer }{os.Stdout}
	cmd.Stderr = struct{ io.Writer }{os.Stderr}
	return exitResponse(cmd.Run(), "python")
}

// exitResponse: what the engine is told of a program's exit. Exit code 32 means the program has
// already shown the user an actionable error (Python's and Go's SDKs use it as Node.js's does).
func exitResponse(err error, what string) (*pulumirpc.RunResponse, error) {
	if err == nil {
		return &pulumirpc.RunResponse{}, nil
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		if exitErr.ExitCode() == bailExitCode {
			return &pulumirpc.RunResponse{Bail: true}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("program exited with non-zero exit code: %d", exitErr.ExitCode())}, nil
	}
	return &pulumirpc.RunResponse{Error: fmt.Sprintf("problem executing program (could not run %s): %v", what, err)}, nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func nonNilSlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
