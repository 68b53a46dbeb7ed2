// Command ref runs the Kubernetes API server's own request path for a custom resource over a stream of cases.
//
// Each line of stdin is a JSON case {"id", "crd" (path of a CustomResourceDefinition YAML file), "version",
// "object", "oldObject" (optional: the stored object, which makes the case an update)}. Each line of stdout
// is the verdict: {"id", "allowed", "stage", "errors": [{"type", "field", "detail"}], "ratcheted"}.
//
// The path is the one k8s.io/apiextensions-apiserver serves (customresource_handler.go): strict decoding,
// structural pruning (an unknown field is an error under fieldValidation=Strict, kubectl's default),
// removal of non-nullable nulls (PruneNonNullableNullsWithoutDefaults), ObjectMeta coercion, defaulting,
// name generation, then rest.BeforeCreate / rest.BeforeUpdate with customresource.NewStrategy: the OpenAPI
// schema validator, embedded ObjectMeta, list-type invariants and the CEL validator compiled from the
// structural schema, with validation ratcheting (feature gate CRDValidationRatcheting, GA and locked on
// since 1.33). "ratcheted" says an update was accepted although the same object would be refused on create.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/yaml"
)

type testCase struct {
	ID        string          `json:"id"`
	CRD       string          `json:"crd"`
	Version   string          `json:"version"`
	Object    json.RawMessage `json:"object"`
	OldObject json.RawMessage `json:"oldObject,omitempty"`
}

type fieldError struct {
	Type   string `json:"type"`
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

type verdict struct {
	ID        string       `json:"id"`
	Allowed   bool         `json:"allowed"`
	Stage     string       `json:"stage,omitempty"`
	Errors    []fieldError `json:"errors"`
	Ratcheted bool         `json:"ratcheted"`
}

type strategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
}

type served struct {
	gk         schema.GroupKind
	version    string
	namespaced bool
	structural *structuralschema.Structural
	strategy   strategy
}

var cache = map[string]*served{}

func load(file, version string) (*served, error) {
	key := file + "\x00" + version
	if s, ok := cache[key]; ok {
		return s, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var v *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == version {
			v = &crd.Spec.Versions[i]
		}
	}
	if v == nil || v.Schema == nil {
		return nil, fmt.Errorf("%s: no schema for version %s", file, version)
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
		return nil, err
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("%s: not structural: %w", file, err)
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	var status *apiextensionsinternal.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	var scale *apiextensionsinternal.CustomResourceSubresourceScale
	if v.Subresources != nil && v.Subresources.Status != nil {
		status = &apiextensionsinternal.CustomResourceSubresourceStatus{}
		if p, ok := internal.OpenAPIV3Schema.Properties["status"]; ok {
			statusValidator, _, err = apiservervalidation.NewSchemaValidator(&p)
			if err != nil {
				return nil, err
			}
		}
	}
	if v.Subresources != nil && v.Subresources.Scale != nil {
		scale = &apiextensionsinternal.CustomResourceSubresourceScale{}
		if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(v.Subresources.Scale, scale, nil); err != nil {
			return nil, err
		}
	}
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind}
	st := customresource.NewStrategy(unstructuredscheme.NewUnstructuredObjectTyper(), namespaced, gvk, validator, statusValidator, s, status, scale, nil)
	out := &served{gk: gvk.GroupKind(), version: version, namespaced: namespaced, structural: s, strategy: st}
	cache[key] = out
	return out, nil
}

// badRequest is a request the decoder refuses, as the API server's create and update handlers word it
// (k8s.io/apiserver/pkg/endpoints/handlers: "%v in version %q cannot be handled as a %v: %v").
func (s *served) badRequest(err error) fieldError {
	return fieldError{Type: "BadRequest", Detail: fmt.Sprintf("%v in version %q cannot be handled as a %v: %v", s.gk.Kind, s.version, s.gk.Kind, err)}
}

// decode is what the API server does to a request body before validation: strict JSON decoding, pruning
// (unknown fields are errors under fieldValidation=Strict), removal of non-nullable nulls, ObjectMeta
// coercion, then defaulting.
func decode(raw json.RawMessage, s *served) (*unstructured.Unstructured, []fieldError) {
	var content map[string]interface{}
	if err := utiljson.Unmarshal(raw, &content); err != nil {
		return nil, []fieldError{{Type: "BadRequest", Detail: err.Error()}}
	}
	if content == nil {
		return nil, []fieldError{{Type: "BadRequest", Detail: "not an object"}}
	}
	u := &unstructured.Unstructured{Object: content}
	kind, _, _ := unstructured.NestedString(content, "kind")
	apiVersion, _, _ := unstructured.NestedString(content, "apiVersion")
	objectMeta, foundMeta, metaUnknown, err := schemaobjectmeta.GetObjectMetaWithOptions(content, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return nil, []fieldError{s.badRequest(err)}
	}
	unknown := append([]string{}, metaUnknown...)
	opts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}
	unknown = append(unknown, structuralpruning.PruneWithOptions(content, s.structural, true, opts)...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(content, s.structural)
	cerr, paths := schemaobjectmeta.CoerceWithOptions(nil, content, s.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if cerr != nil {
		return nil, []fieldError{s.badRequest(cerr)}
	}
	unknown = append(unknown, paths...)
	u.SetKind(kind)
	u.SetAPIVersion(apiVersion)
	if foundMeta {
		if err := schemaobjectmeta.SetObjectMeta(content, objectMeta); err != nil {
			return nil, []fieldError{{Type: "BadRequest", Field: "metadata", Detail: err.Error()}}
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		errs := make([]fieldError, 0, len(unknown))
		for _, p := range unknown {
			errs = append(errs, fieldError{Type: "FieldValueUnknown", Field: p, Detail: fmt.Sprintf("unknown field %q", p)})
		}
		return nil, errs
	}
	structuraldefaulting.Default(content, s.structural)
	return u, nil
}

func fieldErrors(err error) []fieldError {
	var out []fieldError
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			out = append(out, fieldError{Type: string(c.Type), Field: c.Field, Detail: c.Message})
		}
		if len(out) > 0 {
			return out
		}
	}
	return []fieldError{{Type: "Internal", Detail: err.Error()}}
}

func errList(errs field.ErrorList) []fieldError {
	out := make([]fieldError, 0, len(errs))
	for _, e := range errs {
		out = append(out, fieldError{Type: string(e.Type), Field: e.Field, Detail: e.ErrorBody()})
	}
	return out
}

func requestContext(u *unstructured.Unstructured, s *served) context.Context {
	ctx := context.Background()
	if s.namespaced {
		ns := u.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
			u.SetNamespace(ns)
		}
		return genericapirequest.WithNamespace(ctx, ns)
	}
	return genericapirequest.WithNamespace(ctx, metav1.NamespaceNone)
}

// create runs the create path on a decoded object; it returns the stored object or the rejection.
func create(u *unstructured.Unstructured, s *served) (*unstructured.Unstructured, error) {
	ctx := requestContext(u, s)
	if base := u.GetGenerateName(); base != "" && u.GetName() == "" {
		// names.SimpleNameGenerator: the prefix cut to MaxGeneratedNameLength, then 5 random characters.
		if len(base) > names.MaxGeneratedNameLength {
			base = base[:names.MaxGeneratedNameLength]
		}
		u.SetName(base + "x7k2q")
	}
	rest.FillObjectMetaSystemFields(u)
	if err := rest.BeforeCreate(s.strategy, ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

func run(c testCase) verdict {
	out := verdict{ID: c.ID, Allowed: true, Errors: []fieldError{}}
	s, err := load(c.CRD, c.Version)
	if err != nil {
		out.Allowed, out.Stage, out.Errors = false, "crd", []fieldError{{Type: "Internal", Detail: err.Error()}}
		return out
	}
	obj, errs := decode(c.Object, s)
	if errs != nil {
		out.Allowed, out.Stage, out.Errors = false, "decode", errs
		return out
	}
	if len(c.OldObject) == 0 {
		if _, err := create(obj, s); err != nil {
			out.Allowed, out.Stage, out.Errors = false, "validate", fieldErrors(err)
		}
		return out
	}
	// The stored object went through the same decoding when it was written; it is read back as stored, so
	// it is not validated again (it may be invalid under a stricter CRD: that is what ratcheting is for).
	old, errs := decode(c.OldObject, s)
	if errs != nil {
		out.Allowed, out.Stage, out.Errors = false, "decode-old", errs
		return out
	}
	requestContext(old, s)
	rest.FillObjectMetaSystemFields(old)
	old.SetUID(types.UID("00000000-0000-0000-0000-000000000001"))
	old.SetGeneration(1)
	old.SetResourceVersion("1")
	obj.SetResourceVersion("1")
	fresh := obj.DeepCopy()
	ctx := requestContext(obj, s)
	if err := rest.BeforeUpdate(s.strategy, ctx, obj, old); err != nil {
		out.Allowed, out.Stage, out.Errors = false, "validate", fieldErrors(err)
		return out
	}
	// Ratcheted: the same object, created afresh, would be refused by its spec's validation.
	fresh.SetUID("")
	fresh.SetCreationTimestamp(metav1.Time{})
	if s.namespaced {
		fresh.SetNamespace(obj.GetNamespace())
	}
	if _, err := create(fresh, s); err != nil {
		out.Ratcheted = true
	}
	return out
}

func main() {
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
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "read: %v\n", err)
		os.Exit(2)
	}
}
