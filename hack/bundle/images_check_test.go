package main

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/capwin/capwin/node-components/render"
)

// checker checks the Packer templates under root/images; root stands for the
// repository (out/bundle is under it).
type checker struct {
	root string
	// used collects every file under images/ a template copies or runs.
	used map[string]bool
}

// packerDir is one Packer directory: Packer reads all its *.pkr.hcl together.
type packerDir struct {
	dir   string
	files []*hcl.File
	names []string
}

// check runs every check and returns the problems, each naming where.
func check(root string) []string {
	c := &checker{root: root, used: map[string]bool{}}
	dirs, problems := c.load()
	if len(dirs) == 0 && len(problems) == 0 {
		problems = append(problems, "no *.pkr.hcl under images/")
	}
	for _, d := range dirs {
		ctx, evalProblems := c.evalContext(d)
		problems = append(problems, evalProblems...)
		problems = append(problems, c.paths(d, ctx)...)
		problems = append(problems, c.releases(d, ctx)...)
	}
	problems = append(problems, c.sharedVariables(dirs)...)
	if len(problems) == 0 {
		problems = append(problems, c.unused()...)
	}
	return problems
}

// sharedVariables checks that a variable declared in more than one Packer
// directory has the same type, default, validation and sensitivity in each,
// so that one -var means the same thing to every template. Descriptions may
// differ (they speak of the platform); whitespace and comments do not count.
func (c *checker) sharedVariables(dirs []*packerDir) []string {
	type decl struct {
		dir, text string
	}
	first := map[string]decl{}
	var problems []string
	for _, d := range dirs {
		vars := d.variables()
		names := make([]string, 0, len(vars))
		for name := range vars {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			text := d.declaration(vars[name])
			if f, ok := first[name]; !ok {
				first[name] = decl{dir: c.rel(d.dir), text: text}
			} else if f.text != text {
				problems = append(problems, fmt.Sprintf("variable %q is declared differently in %s and %s (type, default, validation or sensitive): keep them the same", name, f.dir, c.rel(d.dir)))
			}
		}
	}
	return problems
}

// declaration returns a variable block's attributes but its description,
// in name order, and its nested blocks, as tokens.
func (d *packerDir) declaration(b *hclsyntax.Block) string {
	names := make([]string, 0, len(b.Body.Attributes))
	for name := range b.Body.Attributes {
		if name != "description" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var parts []string
	for _, name := range names {
		r := b.Body.Attributes[name].SrcRange
		parts = append(parts, tokensText(r.SliceBytes(d.source(r.Filename))))
	}
	for _, inner := range b.Body.Blocks {
		r := inner.Range()
		parts = append(parts, tokensText(r.SliceBytes(d.source(r.Filename))))
	}
	return strings.Join(parts, " ; ")
}

// source returns the bytes of one of the directory's files.
func (d *packerDir) source(name string) []byte {
	for i, n := range d.names {
		if n == name {
			return d.files[i].Bytes
		}
	}
	return nil
}

// tokensText joins an HCL fragment's tokens with single spaces, leaving out
// comments and newlines.
func tokensText(src []byte) string {
	tokens, _ := hclsyntax.LexConfig(src, "", hcl.InitialPos)
	var parts []string
	for _, t := range tokens {
		switch t.Type {
		case hclsyntax.TokenComment, hclsyntax.TokenNewline, hclsyntax.TokenEOF:
			continue
		}
		parts = append(parts, string(t.Bytes))
	}
	return strings.Join(parts, " ")
}

func (c *checker) imagesDir() string { return filepath.Join(c.root, "images") }

func (c *checker) rel(p string) string {
	if r, err := filepath.Rel(c.root, p); err == nil {
		return filepath.ToSlash(r)
	}
	return p
}

// load parses every images/**/*.pkr.hcl, grouped by directory.
func (c *checker) load() ([]*packerDir, []string) {
	byDir := map[string]*packerDir{}
	var problems []string
	parser := hclparse.NewParser()
	err := filepath.WalkDir(c.imagesDir(), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() || !strings.HasSuffix(p, ".pkr.hcl") {
			return nil
		}
		f, diags := parser.ParseHCLFile(p)
		if diags.HasErrors() {
			problems = append(problems, fmt.Sprintf("%s does not parse: %s", c.rel(p), diags.Error()))
			return nil
		}
		d := byDir[filepath.Dir(p)]
		if d == nil {
			d = &packerDir{dir: filepath.Dir(p)}
			byDir[d.dir] = d
		}
		d.files = append(d.files, f)
		d.names = append(d.names, p)
		return nil
	})
	if err != nil {
		problems = append(problems, fmt.Sprintf("reading images/: %v", err))
	}
	dirs := make([]*packerDir, 0, len(byDir))
	for _, d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].dir < dirs[j].dir })
	return dirs, problems
}

func body(f *hcl.File) *hclsyntax.Body { return f.Body.(*hclsyntax.Body) }

// blocks returns the directory's top-level blocks of a type.
func (d *packerDir) blocks(typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, f := range d.files {
		for _, b := range body(f).Blocks {
			if b.Type == typ {
				out = append(out, b)
			}
		}
	}
	return out
}

func (d *packerDir) variables() map[string]*hclsyntax.Block {
	vars := map[string]*hclsyntax.Block{}
	for _, b := range d.blocks("variable") {
		if len(b.Labels) == 1 {
			vars[b.Labels[0]] = b
		}
	}
	return vars
}

func (d *packerDir) locals() map[string]*hclsyntax.Attribute {
	locals := map[string]*hclsyntax.Attribute{}
	for _, b := range d.blocks("locals") {
		for name, a := range b.Body.Attributes {
			locals[name] = a
		}
	}
	return locals
}

// evalContext is what the checks evaluate expressions with: the variables'
// defaults (unknown without one), path.root, the locals, and the Packer
// functions the templates use. A file function reads nothing it is not
// given: a missing file makes an unknown value, which the path check
// reports where it matters.
func (c *checker) evalContext(d *packerDir) (*hcl.EvalContext, []string) {
	var problems []string
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"path":   cty.ObjectVal(map[string]cty.Value{"root": cty.StringVal(d.dir), "cwd": cty.StringVal(d.dir)}),
			"build":  cty.DynamicVal,
			"source": cty.DynamicVal,
			"packer": cty.DynamicVal,
		},
		Functions: map[string]function.Function{
			"abspath":      abspathFunc,
			"can":          tryfunc.CanFunc,
			"concat":       stdlib.ConcatFunc,
			"contains":     stdlib.ContainsFunc,
			"join":         stdlib.JoinFunc,
			"length":       stdlib.LengthFunc,
			"lower":        stdlib.LowerFunc,
			"regex":        stdlib.RegexFunc,
			"replace":      stdlib.ReplaceFunc,
			"substr":       stdlib.SubstrFunc,
			"trimprefix":   stdlib.TrimPrefixFunc,
			"file":         fileFunc(),
			"templatefile": templateFileFunc(),
		},
	}
	vars := map[string]cty.Value{}
	for name, b := range d.variables() {
		vars[name] = cty.DynamicVal
		if def, ok := b.Body.Attributes["default"]; ok {
			v, diags := def.Expr.Value(ctx)
			if diags.HasErrors() {
				problems = append(problems, fmt.Sprintf("%s: the default of variable %q: %s", c.rel(def.SrcRange.Filename), name, diags.Error()))
				continue
			}
			vars[name] = v
		}
	}
	ctx.Variables["var"] = cty.ObjectVal(vars)

	// Locals may refer to each other in any order: evaluate until no more
	// come out.
	pending := d.locals()
	done := map[string]cty.Value{}
	errs := map[string]hcl.Diagnostics{}
	for len(pending) > 0 {
		ctx.Variables["local"] = cty.ObjectVal(done)
		progress := false
		for name, a := range pending {
			v, diags := a.Expr.Value(ctx)
			if diags.HasErrors() {
				errs[name] = diags
				continue
			}
			done[name] = v
			delete(pending, name)
			delete(errs, name)
			progress = true
		}
		if !progress {
			break
		}
	}
	ctx.Variables["local"] = cty.ObjectVal(done)
	for name, diags := range errs {
		problems = append(problems, fmt.Sprintf("local.%s in %s cannot be evaluated: %s", name, c.rel(d.dir), diags.Error()))
	}
	sort.Strings(problems)
	return ctx, problems
}

// fileFunc stands for Packer's file: it reads nothing, so that a file
// make bundle writes need not exist for the paths to be evaluated.
func fileFunc() function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
			return cty.UnknownVal(cty.String), nil
		},
	})
}

// abspathFunc is Packer's abspath, for the directories' local.root.
var abspathFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "path", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := filepath.Abs(args[0].AsString())
		return cty.StringVal(filepath.ToSlash(p)), err
	},
})

func templateFileFunc() function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}, {Name: "vars", Type: cty.DynamicPseudoType, AllowUnknown: true}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
			return cty.UnknownVal(cty.String), nil
		},
	})
}

// pathExprs returns the expressions in a directory that name files of the
// machine running Packer: a file provisioner's source(s), a provisioner's
// script(s), a source's cd_files and floppy_files, and the first argument
// of file and templatefile.
func (d *packerDir) pathExprs() []hclsyntax.Expression {
	var out []hclsyntax.Expression
	attrs := func(b *hclsyntax.Body, names ...string) {
		for _, n := range names {
			if a, ok := b.Attributes[n]; ok {
				out = append(out, a.Expr)
			}
		}
	}
	for _, src := range d.blocks("source") {
		attrs(src.Body, "cd_files", "floppy_files")
	}
	for _, b := range d.blocks("build") {
		for _, p := range b.Body.Blocks {
			if p.Type != "provisioner" || len(p.Labels) != 1 {
				continue
			}
			attrs(p.Body, "script", "scripts")
			if p.Labels[0] == "file" {
				if dir, ok := p.Body.Attributes["direction"]; ok {
					if v, diags := dir.Expr.Value(nil); !diags.HasErrors() && v.Type() == cty.String && v.AsString() == "download" {
						continue
					}
				}
				attrs(p.Body, "source", "sources")
			}
		}
	}
	for _, f := range d.files {
		_ = hclsyntax.VisitAll(body(f), func(n hclsyntax.Node) hcl.Diagnostics {
			if call, ok := n.(*hclsyntax.FunctionCallExpr); ok && len(call.Args) > 0 {
				switch call.Name {
				case "file", "templatefile":
					out = append(out, call.Args[0])
				}
			}
			return nil
		})
	}
	return out
}

// paths marks the files under images/ that a template copies or runs as
// used. Whether they exist, and whether the template finds them from either
// working directory, is the real packer validate's to say (packer_test.go);
// a path that cannot be evaluated here is reported, as what it names could
// not be marked.
func (c *checker) paths(d *packerDir, ctx *hcl.EvalContext) []string {
	var problems []string
	for _, expr := range d.pathExprs() {
		at := fmt.Sprintf("%s:%d", c.rel(expr.Range().Filename), expr.Range().Start.Line)
		v, diags := expr.Value(ctx)
		if diags.HasErrors() {
			problems = append(problems, fmt.Sprintf("%s: the path cannot be evaluated: %s", at, diags.Error()))
			continue
		}
		var paths []cty.Value
		switch {
		case !v.IsWhollyKnown() || v.IsNull():
			problems = append(problems, fmt.Sprintf("%s: the path is not known from the defaults", at))
			continue
		case v.Type() == cty.String:
			paths = []cty.Value{v}
		case v.CanIterateElements():
			for it := v.ElementIterator(); it.Next(); {
				_, e := it.Element()
				paths = append(paths, e)
			}
		default:
			problems = append(problems, fmt.Sprintf("%s: a path must be a string or a list of strings, not %s", at, v.Type().FriendlyName()))
			continue
		}
		for _, pv := range paths {
			if pv.Type() == cty.String {
				c.markUsed(filepath.Clean(filepath.FromSlash(pv.AsString())))
			}
		}
	}
	return problems
}

func (c *checker) markUsed(p string) {
	_ = filepath.WalkDir(p, func(q string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			c.used[q] = true
		}
		return nil
	})
}

// unused reports the scripts and files under images/ that no template uses:
// a file that is kept but never copied is a change that does not reach the
// image.
func (c *checker) unused() []string {
	var problems []string
	for _, sub := range []string{"scripts", "files"} {
		_ = filepath.WalkDir(filepath.Join(c.imagesDir(), sub), func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && !c.used[p] {
				problems = append(problems, fmt.Sprintf("%s is used by no template", c.rel(p)))
			}
			return nil
		})
	}
	return problems
}

// releases checks a directory's Windows Server releases: the list the
// windows_release variable's validation accepts, the keys of the
// windows_releases locals map, and that map's container tags and builds,
// which must be the node agent's pinned pause image table.
func (c *checker) releases(d *packerDir, ctx *hcl.EvalContext) []string {
	where := c.rel(d.dir)
	v := d.variables()["windows_release"]
	if v == nil {
		return []string{fmt.Sprintf("%s: no variable windows_release", where)}
	}
	var accepted []string
	for _, b := range v.Body.Blocks {
		if b.Type != "validation" {
			continue
		}
		cond, ok := b.Body.Attributes["condition"]
		if !ok {
			continue
		}
		_ = hclsyntax.VisitAll(cond.Expr, func(n hclsyntax.Node) hcl.Diagnostics {
			call, ok := n.(*hclsyntax.FunctionCallExpr)
			if !ok || call.Name != "contains" || len(call.Args) != 2 {
				return nil
			}
			list, diags := call.Args[0].Value(nil)
			if diags.HasErrors() || !list.CanIterateElements() {
				return nil
			}
			for it := list.ElementIterator(); it.Next(); {
				_, e := it.Element()
				if e.Type() == cty.String {
					accepted = append(accepted, e.AsString())
				}
			}
			return nil
		})
	}
	if len(accepted) == 0 {
		return []string{fmt.Sprintf("%s: variable windows_release has no validation contains([...], var.windows_release)", where)}
	}
	var problems []string
	if def, ok := v.Body.Attributes["default"]; ok {
		if dv, diags := def.Expr.Value(nil); !diags.HasErrors() && dv.Type() == cty.String && !slices.Contains(accepted, dv.AsString()) {
			problems = append(problems, fmt.Sprintf("%s: windows_release defaults to %q, which its validation refuses", where, dv.AsString()))
		}
	}

	local := ctx.Variables["local"]
	if !local.Type().IsObjectType() || !local.Type().HasAttribute("windows_releases") {
		return append(problems, fmt.Sprintf("%s: no local windows_releases", where))
	}
	table := local.GetAttr("windows_releases")
	if !table.IsWhollyKnown() || !table.CanIterateElements() {
		return append(problems, fmt.Sprintf("%s: local windows_releases is not a map", where))
	}
	var keys, pins []string
	for it := table.ElementIterator(); it.Next(); {
		k, e := it.Element()
		keys = append(keys, k.AsString())
		tag, build := stringAttr(e, "container_release"), stringAttr(e, "build")
		if tag != "ltsc"+k.AsString() {
			problems = append(problems, fmt.Sprintf("%s: windows_releases[%q].container_release is %q, not ltsc%s", where, k.AsString(), tag, k.AsString()))
		}
		pins = append(pins, tag+"="+build)
	}
	var want []string
	for _, p := range render.PauseImages {
		want = append(want, p.Release+"="+p.Build)
	}
	sort.Strings(accepted)
	sort.Strings(keys)
	sort.Strings(pins)
	sort.Strings(want)
	if !slices.Equal(accepted, keys) {
		problems = append(problems, fmt.Sprintf("%s: windows_release accepts %v, but windows_releases has %v", where, accepted, keys))
	}
	if !slices.Equal(pins, want) {
		problems = append(problems, fmt.Sprintf("%s: windows_releases has %v (release=build); the node agent pins pause images for %v (render.PauseImages)", where, pins, want))
	}
	return problems
}

func stringAttr(v cty.Value, name string) string {
	if !v.Type().IsObjectType() || !v.Type().HasAttribute(name) {
		return ""
	}
	a := v.GetAttr(name)
	if !a.IsKnown() || a.IsNull() || a.Type() != cty.String {
		return ""
	}
	return a.AsString()
}
