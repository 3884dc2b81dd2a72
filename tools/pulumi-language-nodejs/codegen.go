package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/hcl2/syntax"
	nodejsgen "github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/pcl"
	pythongen "github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// GenerateProgram turns a PCL program into the host's language (`pulumi import` prints it,
// `pulumi convert` writes it), with Pulumi's own generator, bound as that language's own host
// binds it: output-versioned invokes, and non-strict binding unless the engine asks for strict
// (Go's host always binds strictly).
func (h *languageHost) GenerateProgram(
	_ context.Context, req *pulumirpc.GenerateProgramRequest,
) (*pulumirpc.GenerateProgramResponse, error) {
	loader, err := schema.NewLoaderClient(req.LoaderTarget)
	if err != nil {
		return nil, err
	}
	defer loader.Close()

	parser := syntax.NewParser()
	for path, contents := range req.Source {
		if err := parser.ParseFile(strings.NewReader(contents), path); err != nil {
			return nil, err
		}
		if parser.Diagnostics.HasErrors() {
			return nil, parser.Diagnostics
		}
	}
	options := []pcl.BindOption{pcl.PreferOutputVersionedInvokes}
	if !req.Strict && h.language != "go" {
		options = append(options, pcl.NonStrictBindOptions()...)
	}
	program, diags, err := pcl.BindProgram(parser.Files, schema.NewCachedLoader(loader), options...)
	if err != nil {
		return nil, err
	}
	rpcDiagnostics := plugin.HclDiagnosticsToRPCDiagnostics(diags)
	if diags.HasErrors() {
		return &pulumirpc.GenerateProgramResponse{Diagnostics: rpcDiagnostics}, nil
	}
	if program == nil {
		return nil, errors.New("internal error: the program was not bound")
	}

	var files map[string][]byte
	var genDiags hcl.Diagnostics
	switch h.language {
	case "nodejs":
		files, genDiags, err = nodejsgen.GenerateProgramWithOptions(program, nodejsgen.ProgramOptions{Runtime: "nodejs"})
	case "python":
		files, genDiags, err = pythongen.GenerateProgram(program)
	case "go":
		files, genDiags, err = gogen.GenerateProgram(program)
	default:
		return nil, fmt.Errorf("no program generator for %s", h.language)
	}
	if err != nil {
		return nil, err
	}
	return &pulumirpc.GenerateProgramResponse{
		Source:      files,
		Diagnostics: append(rpcDiagnostics, plugin.HclDiagnosticsToRPCDiagnostics(genDiags)...),
	}, nil
}

// GeneratePackage writes an SDK for a package schema (`pulumi package gen-sdk`,
// `pulumi package add`), with the code generator Pulumi's own host for the
// language uses (github.com/pulumi/pulumi/pkg/v3/codegen/<language>), exactly
// as those hosts call it.
func (h *languageHost) GeneratePackage(
	_ context.Context, req *pulumirpc.GeneratePackageRequest,
) (*pulumirpc.GeneratePackageResponse, error) {
	loader, err := schema.NewLoaderClient(req.LoaderTarget)
	if err != nil {
		return nil, err
	}
	defer loader.Close()

	var spec schema.PackageSpec
	if err := json.Unmarshal([]byte(req.Schema), &spec); err != nil {
		return nil, err
	}
	cached := schema.NewCachedLoader(loader)
	pkg, diags, err := schema.BindSpec(spec, cached, schema.ValidationOptions{AllowDanglingReferences: true})
	if err != nil {
		return nil, err
	}
	rpcDiagnostics := plugin.HclDiagnosticsToRPCDiagnostics(diags)
	if diags.HasErrors() {
		return &pulumirpc.GeneratePackageResponse{Diagnostics: rpcDiagnostics}, nil
	}

	tool := "pulumi-language-" + h.language
	var files map[string][]byte
	switch h.language {
	case "nodejs":
		files, err = nodejsgen.GeneratePackage(tool, pkg, req.ExtraFiles, req.LocalDependencies, req.Local, cached)
	case "python":
		files, err = pythongen.GeneratePackage(tool, pkg, req.ExtraFiles, cached)
	case "go":
		if len(req.ExtraFiles) > 0 {
			return nil, fmt.Errorf("overlays are not supported for Go")
		}
		files, err = gogen.GeneratePackage(tool, pkg, req.LocalDependencies)
	default:
		return nil, fmt.Errorf("no code generator for %s", h.language)
	}
	if err != nil {
		return nil, err
	}
	for filename, data := range files {
		outPath := filepath.Join(req.Directory, filename)
		if err := os.MkdirAll(filepath.Dir(outPath), 0o700); err != nil {
			return nil, fmt.Errorf("could not create output directory %s: %w", filepath.Dir(filename), err)
		}
		if err := os.WriteFile(outPath, data, 0o600); err != nil {
			return nil, fmt.Errorf("could not write output file %s: %w", filename, err)
		}
	}
	return &pulumirpc.GeneratePackageResponse{Diagnostics: rpcDiagnostics}, nil
}
