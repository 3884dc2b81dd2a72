// Command pulumi-language-nodejs is a deliberately minimal stand-in for Pulumi's
// official Node.js language host. It exists only because the official host
// (module github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3) is
// not served by the Go module proxy reachable from our offline build machines;
// scripts/ensure-pulumi builds it only when the official one cannot be fetched.
//
// What it does: the Pulumi engine spawns it, reads the port it prints, and then
// asks it (over gRPC) to Run a program. Running a program means starting
// `node <@pulumi/pulumi/cmd/run> ...`, which is the real runtime that talks to
// the engine's resource monitor. Everything else is answered with "nothing to
// do" because we never let the engine acquire or install plugins.
//
// What it deliberately does not do: install npm dependencies, discover
// provider plugins from node_modules,
// synchronous invokes through file pipes (only legacy `invokeSync` needs them),
// the bun runtime, policy packs. Code generation (SDKs, and the programs
// `pulumi import` prints) is Pulumi's own generators', in codegen.go.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// version is reported to the engine through GetPluginInfo; the build script
// overrides it with -ldflags "-X main.version=<pinned version>".
var version = "3.248.0"

// bailExitCode is what @pulumi/pulumi/cmd/run exits with after it has already
// shown the user an actionable error; the engine must then stay quiet
// (RunResponse.bail) instead of printing a second, generic failure.
const bailExitCode = 32

const defaultRunModule = "@pulumi/pulumi/cmd/run"

func main() {
	// The engine may pass -tracing; accept and ignore it so startup never fails on it.
	flag.String("tracing", "", "ignored: tracing is not supported by this minimal host")
	showVersion := flag.Bool("version", false, "print the plugin version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version)
		return
	}

	host := &languageHost{language: languageOf(os.Args[0])}
	if flag.NArg() > 0 {
		host.engineAddress = flag.Arg(0)
	}
	host.cancelCtx, host.cancelAll = context.WithCancel(context.Background())

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("could not listen: %v", err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(400 * 1024 * 1024))
	pulumirpc.RegisterLanguageRuntimeServer(srv, host)

	// The engine reads exactly one line from our stdout, the port, before it
	// dials us; anything printed earlier would be taken for the port.
	fmt.Printf("%d\n", lis.Addr().(*net.TCPAddr).Port)

	go stopWhenEngineGoesAway(host.engineAddress, srv)
	go func() {
		// Ctrl-C reaches node too (same process group); let a running
		// program wind down and report before we stop answering the engine.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		<-sigs
		srv.GracefulStop()
	}()

	if err := srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		fatalf("language host stopped serving: %v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pulumi-language-nodejs (tuskr minimal host): "+format+"\n", args...)
	os.Exit(1)
}

// stopWhenEngineGoesAway exits once the engine's gRPC endpoint stops accepting
// connections, so a crashed CLI cannot leave this process (and its node
// child) running forever. The engine normally kills us itself.
func stopWhenEngineGoesAway(addr string, srv *grpc.Server) {
	if addr == "" {
		return
	}
	failures := 0
	for range time.Tick(2 * time.Second) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			failures = 0
			continue
		}
		if failures++; failures >= 3 {
			srv.Stop()
			os.Exit(0)
		}
	}
}

type languageHost struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	// "nodejs"; or "python" or "go" when installed under those hosts' names
	// (see languageOf): Run and GeneratePackage serve that language.
	language string

	mu            sync.Mutex
	engineAddress string

	// cancelCtx is cancelled by the Cancel RPC (the user pressed Ctrl-C in the
	// CLI); running programs get SIGINT so the Node runtime can shut down.
	cancelCtx context.Context
	cancelAll context.CancelFunc
}

func (h *languageHost) engine() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.engineAddress
}

// Handshake is only used when the engine attaches to an already running host
// (PULUMI_DEBUG_LANGUAGES); spawned hosts get the engine address as argv[1].
func (h *languageHost) Handshake(
	_ context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.mu.Lock()
	h.engineAddress = req.GetEngineAddress()
	h.mu.Unlock()
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *languageHost) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// Reporting no required plugins keeps the engine from trying to download
// anything; the only provider a dynamic-resource program needs
// (pulumi-resource-pulumi-nodejs) is found on PATH when first used.
func (h *languageHost) GetRequiredPlugins(
	context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *languageHost) GetRequiredPackages(
	context.Context, *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

func (h *languageHost) GetProgramDependencies(
	context.Context, *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	return &pulumirpc.GetProgramDependenciesResponse{}, nil
}

// InstallDependencies (`pulumi install`, `pulumi new`) is a no-op: callers run
// `npm ci` themselves. Saying so beats failing with "unimplemented".
func (h *languageHost) InstallDependencies(
	_ *pulumirpc.InstallDependenciesRequest,
	stream grpc.ServerStreamingServer[pulumirpc.InstallDependenciesResponse],
) error {
	how := map[string]string{
		"nodejs": "run `npm install`",
		"python": "create the virtualenv and `pip install -r requirements.txt` in it",
		"go":     "`go build` fetches the modules",
	}[h.language]
	return stream.Send(&pulumirpc.InstallDependenciesResponse{
		Stdout: []byte("minimal " + h.language + " language host: not installing dependencies; " + how + " yourself\n"),
	})
}

func (h *languageHost) About(context.Context, *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("could not find node on the $PATH: %w", err)
	}
	out, err := exec.Command(nodeBin, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("running %s --version: %w", nodeBin, err)
	}
	return &pulumirpc.AboutResponse{
		Executable: nodeBin,
		Version:    strings.TrimPrefix(strings.TrimSpace(string(out)), "v"),
		Metadata:   map[string]string{"host": "tuskr minimal pulumi-language-nodejs"},
	}, nil
}

func (h *languageHost) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.cancelAll()
	return &emptypb.Empty{}, nil
}

// runtimeOptions mirrors the `runtime.options` a Pulumi.yaml may set for nodejs.
type runtimeOptions struct {
	typescript bool
	tsconfig   string
	nodeargs   []string
}

func parseRuntimeOptions(opts map[string]any) (runtimeOptions, error) {
	ro := runtimeOptions{typescript: true} // TypeScript is on unless the project opts out.
	if v, ok := opts["typescript"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return ro, errors.New("runtime option 'typescript' must be a boolean")
		}
		ro.typescript = b
	}
	if v, ok := opts["tsconfig"]; ok {
		s, isString := v.(string)
		if !isString {
			return ro, errors.New("runtime option 'tsconfig' must be a string")
		}
		ro.tsconfig = s
	}
	if v, ok := opts["nodeargs"]; ok {
		s, isString := v.(string)
		if !isString {
			return ro, errors.New("runtime option 'nodeargs' must be a string")
		}
		// Whitespace splitting only: quoting is not supported by this host.
		ro.nodeargs = strings.Fields(s)
	}
	return ro, nil
}

// resolveRunScript asks node itself where @pulumi/pulumi/cmd/run lives, starting
// from the program directory, so the program's own copy of the SDK is used.
func resolveRunScript(nodeBin, module, programDir string) (string, error) {
	quoted, _ := json.Marshal(module)
	script := fmt.Sprintf("try{console.log(require.resolve(%s))}catch(e){console.error(e.message);process.exit(1)}", quoted)
	cmd := exec.Command(nodeBin, "-e", script)
	cmd.Dir = programDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("could not resolve %s from %s (has `npm install` been run?): %s",
			module, programDir, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func (h *languageHost) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	// Failures to even start the program are reported in RunResponse.error,
	// which the engine shows to the user, rather than as a gRPC error.
	fail := func(err error) (*pulumirpc.RunResponse, error) {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	switch h.language {
	case "python":
		return h.runPython(ctx, req)
	case "go":
		return h.runGo(ctx, req)
	}

	// Old engines send pwd/program instead of ProgramInfo.
	programDir, entryPoint, rootDir := req.GetPwd(), req.GetProgram(), req.GetPwd()
	var rawOptions map[string]any
	if info := req.GetInfo(); info != nil {
		programDir, entryPoint, rootDir = info.GetProgramDirectory(), info.GetEntryPoint(), info.GetRootDirectory()
		rawOptions = info.GetOptions().AsMap()
	}
	if entryPoint == "" {
		entryPoint = "."
	}
	opts, err := parseRuntimeOptions(rawOptions)
	if err != nil {
		return fail(err)
	}

	nodeBin, err := exec.LookPath("node")
	if err != nil {
		return fail(fmt.Errorf("could not find node on the $PATH: %w", err))
	}
	runModule := os.Getenv("PULUMI_LANGUAGE_NODEJS_RUN_PATH")
	if runModule == "" {
		runModule = defaultRunModule
	}
	runScript, err := resolveRunScript(nodeBin, runModule, programDir)
	if err != nil {
		return fail(err)
	}

	args := append([]string{}, opts.nodeargs...)
	args = append(args, runScript)
	flagIfSet := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name, value)
		}
	}
	flagIfSet("monitor", req.GetMonitorAddress())
	flagIfSet("engine", h.engine())
	flagIfSet("organization", req.GetOrganization())
	flagIfSet("project", req.GetProject())
	flagIfSet("root-directory", rootDir)
	flagIfSet("stack", req.GetStack())
	flagIfSet("pwd", programDir)
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	flagIfSet("parallel", strconv.Itoa(int(req.GetParallel())))
	args = append(args, entryPoint)
	args = append(args, req.GetArgs()...)

	// The Node runtime reads configuration from the environment, not argv.
	config := req.GetConfig()
	if config == nil {
		config = map[string]string{}
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return fail(fmt.Errorf("serializing config: %w", err))
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secretKeysJSON, err := json.Marshal(secretKeys)
	if err != nil {
		return fail(fmt.Errorf("serializing secret config keys: %w", err))
	}
	env := append(os.Environ(),
		"PULUMI_CONFIG="+string(configJSON),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secretKeysJSON),
	)
	if opts.typescript {
		env = append(env, "PULUMI_NODEJS_TYPESCRIPT=true")
	}
	if opts.tsconfig != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+opts.tsconfig)
	}

	// Stop the program if the engine cancels the request or sends Cancel.
	runCtx, stop := context.WithCancel(h.cancelCtx)
	defer stop()
	context.AfterFunc(ctx, stop)

	cmd := exec.CommandContext(runCtx, nodeBin, args...)
	cmd.Env = env
	// SIGINT first: the Node runtime then finishes in-flight registrations.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	// Hand node pipes rather than our own file descriptors: node may switch an
	// inherited descriptor to non-blocking mode, which would then break our
	// writes to the engine. Wrapping the *os.File hides it from os/exec.
	cmd.Stdout = struct{ io.Writer }{os.Stdout}
	cmd.Stderr = struct{ io.Writer }{os.Stderr}

	err = cmd.Run()
	if err == nil {
		return &pulumirpc.RunResponse{}, nil
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		if exitErr.ExitCode() == bailExitCode {
			return &pulumirpc.RunResponse{Bail: true}, nil
		}
		return fail(fmt.Errorf("Program exited with non-zero exit code: %d", exitErr.ExitCode()))
	}
	return fail(fmt.Errorf("Problem executing program (could not run node): %w", err))
}

const defaultRunPluginModule = "@pulumi/pulumi/cmd/run-plugin"

// streamWriter sends what a plugin writes to the engine, as RunPlugin's stream of
// stdout or stderr chunks.
type streamWriter struct {
	mu     *sync.Mutex
	server grpc.ServerStreamingServer[pulumirpc.RunPluginResponse]
	stderr bool
}

func (w streamWriter) Write(p []byte) (int, error) {
	chunk := append([]byte(nil), p...)
	resp := &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stdout{Stdout: chunk}}
	if w.stderr {
		resp = &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stderr{Stderr: chunk}}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.server.Send(resp); err != nil {
		return 0, err
	}
	return len(p), nil
}

// RunPlugin runs a Node.js plugin (a directory with a PulumiPlugin.yaml of
// runtime nodejs) as the official host does: `node <@pulumi/pulumi/cmd/run-plugin>
// <plugin dir> <args…>`, resolving the SDK from the plugin's directory, in the
// engine's working directory, with the engine's environment; the plugin's
// stdout and stderr are streamed back, then its exit code. The run-plugin
// script requires the plugin directory (its package.json `main`) and calls the
// function it exports. Policy packs (kind analyzer) are not supported.
func (h *languageHost) RunPlugin(
	req *pulumirpc.RunPluginRequest, server grpc.ServerStreamingServer[pulumirpc.RunPluginResponse],
) error {
	if err := h.nodejsOnly(); err != nil {
		return err
	}
	if req.GetKind() == "analyzer" {
		return errors.New("minimal nodejs language host: policy packs are not supported")
	}
	programDir := req.GetProgram()
	var rawOptions map[string]any
	if info := req.GetInfo(); info != nil {
		programDir = info.GetProgramDirectory()
		rawOptions = info.GetOptions().AsMap()
	}
	opts, err := parseRuntimeOptions(rawOptions)
	if err != nil {
		return err
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("could not find node on the $PATH: %w", err)
	}
	runModule := os.Getenv("PULUMI_LANGUAGE_NODEJS_RUN_PATH")
	if runModule == "" {
		runModule = defaultRunPluginModule
	}
	runScript, err := resolveRunScript(nodeBin, runModule, programDir)
	if err != nil {
		return err
	}

	env := req.GetEnv()
	if opts.typescript {
		env = append(env, "PULUMI_NODEJS_TYPESCRIPT=true")
	}
	if opts.tsconfig != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+opts.tsconfig)
	}
	args := append([]string{}, opts.nodeargs...)
	args = append(args, runScript, programDir)
	args = append(args, req.GetArgs()...)

	ctx, stop := context.WithCancel(h.cancelCtx)
	defer stop()
	context.AfterFunc(server.Context(), stop)

	cmd := exec.CommandContext(ctx, nodeBin, args...)
	cmd.Dir = req.GetPwd()
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	var mu sync.Mutex
	cmd.Stdout = streamWriter{mu: &mu, server: server}
	cmd.Stderr = streamWriter{mu: &mu, server: server, stderr: true}

	code := int32(0)
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return fmt.Errorf("could not run the plugin with node: %w", err)
		}
		code = int32(exitErr.ExitCode())
	}
	mu.Lock()
	defer mu.Unlock()
	return server.Send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: code}})
}

// languageOf tells which host this binary stands in for, from the name it was
// started under: pulumi-language-python and pulumi-language-go are this same
// binary installed under those names (the Go module proxy here serves neither
// official host).
func languageOf(argv0 string) string {
	switch filepath.Base(argv0) {
	case "pulumi-language-python":
		return "python"
	case "pulumi-language-go":
		return "go"
	default:
		return "nodejs"
	}
}

// nodejsOnly refuses to run plugins when standing in for another language's
// host, saying what to install instead.
func (h *languageHost) nodejsOnly() error {
	if h.language == "nodejs" {
		return nil
	}
	return fmt.Errorf("this pulumi-language-%[1]s is the tuskr minimal host, which runs %[1]s programs "+
		"but not %[1]s plugins; install Pulumi's official %[1]s language host for those", h.language)
}
