// Command ref estimates, with the Kubernetes API server's own code, the cost of every CEL rule of a
// CustomResourceDefinition, and validates the CRD as the API server does when it is created.
//
// Each line of stdin is a JSON case {"id", "crd" (a CustomResourceDefinition object, apiextensions.k8s.io/v1)}.
// Each line of stdout is {"id", "errors": [{"type", "field", "detail"}], "rules": [...], "total"}:
//
//   - errors: validation.ValidateCustomResourceDefinition, the API server's validation of a created CRD
//     (k8s.io/apiextensions-apiserver), which refuses a rule whose estimated cost exceeds the per-expression
//     limit and a schema whose rules together exceed the per-CRD limit;
//   - rules: for every x-kubernetes-validations rule, at the path the API server names it, what that
//     validation computes: the rule's estimated cost (cel.Compile: cel-go's checker.Cost with Kubernetes'
//     library.CostEstimator and the schema's size estimates), the cardinality of its schema node (the product
//     of maxItems/maxProperties of the lists and maps above it, null when one is unbounded), the cardinality
//     used when it is unbounded (the largest request divided by the node's smallest serialized size), the
//     cost the limits are checked against, and a messageExpression's estimated cost;
//   - totals: the sums the per-CRD limit is checked against, one per schema (one for all versions when they
//     share it), in the order of their paths.
//
// With the argument "declarations" it writes instead, as one JSON object, the functions and macros of the CEL
// environment the API server compiles CRD rules in (each overload's id, call style, argument and result types
// and type parameters), which the estimator's own declarations are checked against.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	celschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/google/cel-go/common/types"
)

type testCase struct {
	ID  string          `json:"id"`
	CRD json.RawMessage `json:"crd"`
}

type fieldError struct {
	Type   string `json:"type"`
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

type ruleCost struct {
	Path                  string  `json:"path"`
	Rule                  string  `json:"rule"`
	Estimated             uint64  `json:"estimated"`
	Cardinality           *uint64 `json:"cardinality"`
	UnboundedCardinality  uint64  `json:"unboundedCardinality"`
	Cost                  uint64  `json:"cost"`
	MessageExpressionCost *uint64 `json:"messageExpressionCost,omitempty"`
	Error                 string  `json:"error,omitempty"`
}

type result struct {
	ID     string       `json:"id"`
	Error  string       `json:"error,omitempty"`
	Errors []fieldError `json:"errors"`
	Rules  []ruleCost   `json:"rules"`
	Totals []uint64     `json:"totals"`
}

var envSet = environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())

// multiply is the API server's overflow guard (validation.multiplyWithOverflowGuard).
func multiply(cost, cardinality uint64) uint64 {
	if cost == 0 {
		return 0
	} else if math.MaxUint/cost < cardinality {
		return math.MaxUint
	}
	return cost * cardinality
}

func walk(s *apiextensions.JSONSchemaProps, path *field.Path, ctx *validation.CELSchemaContext, out *[]ruleCost) {
	if s == nil || ctx == nil {
		return
	}
	if len(s.XValidations) > 0 {
		rules := path.Child("x-kubernetes-validations")
		info, err := ctx.TypeInfo()
		var results []celschema.CompilationResult
		if err == nil && info != nil {
			results, err = celschema.Compile(info.Schema, info.DeclType, celconfig.PerCallLimit, envSet, celschema.NewExpressionsEnvLoader())
		}
		for i, rule := range s.XValidations {
			rc := ruleCost{Path: rules.Index(i).Child("rule").String(), Rule: rule.Rule, Cardinality: ctx.MaxCardinality}
			if err != nil {
				rc.Error = err.Error()
			} else if info == nil {
				rc.Error = "no type information"
			} else {
				cr := results[i]
				rc.Estimated = cr.MaxCost
				rc.UnboundedCardinality = cr.MaxCardinality
				if ctx.MaxCardinality != nil {
					rc.Cost = multiply(cr.MaxCost, *ctx.MaxCardinality)
				} else {
					rc.Cost = multiply(cr.MaxCost, cr.MaxCardinality)
				}
				if cr.Error != nil {
					rc.Error = cr.Error.Detail
				}
				if cr.MessageExpression != nil {
					c := cr.MessageExpressionMaxCost
					rc.MessageExpressionCost = &c
				}
				ctx.TotalCost.ObserveExpressionCost(rules.Index(i).Child("rule"), rc.Cost)
				if rc.MessageExpressionCost != nil {
					ctx.TotalCost.ObserveExpressionCost(rules.Index(i).Child("messageExpression"), *rc.MessageExpressionCost)
				}
			}
			*out = append(*out, rc)
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(s.AdditionalProperties.Schema, path.Child("additionalProperties"), ctx.ChildAdditionalPropertiesContext(s.AdditionalProperties.Schema), out)
	}
	for name := range s.Properties {
		prop := s.Properties[name]
		walk(&prop, path.Child("properties").Key(name), ctx.ChildPropertyContext(&prop, name), out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(s.Items.Schema, path.Child("items"), ctx.ChildItemsContext(s.Items.Schema), out)
	}
}

func run(c testCase) result {
	out := result{ID: c.ID, Errors: []fieldError{}, Rules: []ruleCost{}, Totals: []uint64{}}
	v1 := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(c.CRD, v1); err != nil {
		out.Error = err.Error()
		return out
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(v1)
	crd := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, crd, nil); err != nil {
		out.Error = err.Error()
		return out
	}
	for _, e := range validation.ValidateCustomResourceDefinition(context.Background(), crd) {
		out.Errors = append(out.Errors, fieldError{Type: string(e.Type), Field: e.Field, Detail: e.ErrorBody()})
	}
	// The internal form holds one schema at spec.validation when every version has the same one (the
	// conversion from v1 hoists it there), else one per version: the API server names paths by that form.
	schemas := map[*field.Path]*apiextensions.CustomResourceValidation{}
	if crd.Spec.Validation != nil {
		schemas[field.NewPath("spec", "validation")] = crd.Spec.Validation
	}
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Schema != nil {
			schemas[field.NewPath("spec", "versions").Index(i).Child("schema")] = crd.Spec.Versions[i].Schema
		}
	}
	paths := make([]*field.Path, 0, len(schemas))
	for p := range schemas {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(a, b int) bool { return paths[a].String() < paths[b].String() })
	for _, p := range paths {
		s := schemas[p].OpenAPIV3Schema
		if s == nil {
			continue
		}
		root := validation.RootCELContext(s)
		walk(s, p.Child("openAPIV3Schema"), root, &out.Rules)
		out.Totals = append(out.Totals, root.TotalCost.Total)
	}
	sort.SliceStable(out.Rules, func(a, b int) bool { return out.Rules[a].Path < out.Rules[b].Path })
	sort.SliceStable(out.Errors, func(a, b int) bool { return out.Errors[a].Field < out.Errors[b].Field })
	return out
}

type celType struct {
	Kind   string     `json:"kind"`
	Name   string     `json:"name"`
	Params []*celType `json:"params,omitempty"`
}

var kinds = map[types.Kind]string{
	types.AnyKind: "any", types.BoolKind: "bool", types.BytesKind: "bytes", types.DoubleKind: "double",
	types.DurationKind: "duration", types.DynKind: "dyn", types.ErrorKind: "error", types.IntKind: "int",
	types.ListKind: "list", types.MapKind: "map", types.NullTypeKind: "null", types.OpaqueKind: "opaque",
	types.StringKind: "string", types.StructKind: "struct", types.TimestampKind: "timestamp",
	types.TypeKind: "type", types.TypeParamKind: "param", types.UintKind: "uint",
}

func describe(t *types.Type) *celType {
	out := &celType{Kind: kinds[t.Kind()], Name: t.TypeName()}
	if out.Kind == "" {
		out.Kind = fmt.Sprintf("kind%d", t.Kind())
	}
	for _, p := range t.Parameters() {
		out.Params = append(out.Params, describe(p))
	}
	return out
}

type overloadDecl struct {
	ID         string     `json:"id"`
	Member     bool       `json:"member"`
	Args       []*celType `json:"args"`
	Result     *celType   `json:"result"`
	TypeParams []string   `json:"typeParams,omitempty"`
}

type declarations struct {
	Functions map[string][]overloadDecl `json:"functions"`
	Macros    []string                  `json:"macros"`
}

func writeDeclarations() {
	env := envSet.NewExpressionsEnv()
	out := declarations{Functions: map[string][]overloadDecl{}}
	for name, fn := range env.Functions() {
		for _, o := range fn.OverloadDecls() {
			d := overloadDecl{ID: o.ID(), Member: o.IsMemberFunction(), Result: describe(o.ResultType()), TypeParams: o.TypeParams()}
			for _, a := range o.ArgTypes() {
				d.Args = append(d.Args, describe(a))
			}
			out.Functions[name] = append(out.Functions[name], d)
		}
	}
	for _, m := range env.Macros() {
		out.Macros = append(out.Macros, m.MacroKey())
	}
	sort.Strings(out.Macros)
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "write: %v\n", err)
		os.Exit(2)
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "declarations" {
		writeDeclarations()
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<20), 64<<20)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		var c testCase
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			fmt.Fprintf(os.Stderr, "bad case: %v\n", err)
			os.Exit(2)
		}
		if err := enc.Encode(run(c)); err != nil {
			fmt.Fprintf(os.Stderr, "write: %v\n", err)
			os.Exit(2)
		}
		w.Flush()
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "read: %v\n", err)
		os.Exit(2)
	}
}
