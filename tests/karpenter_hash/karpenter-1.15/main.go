// Command ref answers drift questions with Karpenter's own code: EC2NodeClass.Hash() from
// github.com/aws/karpenter-provider-aws, NodePool.Hash() from sigs.k8s.io/karpenter, and the static and
// requirements drift checks of both controllers, all at the versions its go.mod pins.
//
// It reads one JSON request per line on stdin and writes one JSON answer per line on stdout:
//
//	{"op": "hash", "object": {...}, "caBundle": "..."}
//	  -> {"hash": "...", "version": "...", "unknown": [...]}
//	{"op": "drift", "old": {...}, "new": {...}, "caBundleOld": "...", "caBundleNew": "...",
//	 "claim": {"hash": "...", "version": "..."}, "claimLabels": {...}}
//	  -> {"reason": "...", "oldHash": "...", "newHash": "...", "version": "...", "unknown": [...]}
//	{"op": "types"}
//	  -> {"types": {...}, "roots": {"EC2NodeClass": ..., "NodePool": ...}, "versions": {...}}
//
// "types" describes, from the Go types themselves (reflection), what hashstructure walks: every struct
// field with its JSON name, its hash tag, and its Go kind, pointer-ness and JSON decoding, so that a model
// of the hash can be checked to follow the same types.
//
// Objects are manifests as a user writes them. Each is first put through what the API server does on
// create (drop unknown fields, drop non-nullable nulls, apply the CRD's defaults), with the structural
// schema of the CRD this module ships, then decoded into the Go type Karpenter uses. A NodeClaim
// launched from "old" carries old's hash and the current hash version, unless "claim" overrides them
// (a NodeClaim stamped by another Karpenter version). The reason is what the controllers report first:
// EC2NodeClass static drift (NodeClassDrift) as the AWS cloud provider decides it; NodePoolDrifted, then
// RequirementsDrifted (only when claimLabels are given) from the core NodeClaim disruption controller.
// Dynamic drift (AMIs, subnets, security groups, capacity reservations, placement groups resolved into
// status) needs a cloud and is not answered here.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"
	_ "unsafe" // go:linkname to the controllers' unexported drift checks

	"github.com/samber/lo"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	sigsjson "sigs.k8s.io/json"

	awsapis "github.com/aws/karpenter-provider-aws/pkg/apis"
	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	_ "sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/disruption" // linked for its drift checks
)

//go:linkname nodePoolStaticDrift sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/disruption.areStaticFieldsDrifted
func nodePoolStaticDrift(nodePool *karpv1.NodePool, nodeClaim *karpv1.NodeClaim) cloudprovider.DriftReason

//go:linkname nodePoolRequirementsDrift sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/disruption.areRequirementsDrifted
func nodePoolRequirementsDrift(nodePool *karpv1.NodePool, nodeClaim *karpv1.NodeClaim) cloudprovider.DriftReason

// nodeClassStaticDrift is the body of (*CloudProvider).areStaticFieldsDrifted in the AWS provider's
// pkg/cloudprovider/drift.go, copied: that package cannot be built from the module proxy (it imports AWS
// SDK service modules the proxy does not serve). tests/test_drift_reference.py checks the copy against
// the module source of every pinned version.
func nodeClassStaticDrift(nodeClaim *karpv1.NodeClaim, nodeClass *awsv1.EC2NodeClass) cloudprovider.DriftReason {
	nodeClassHash, foundNodeClassHash := nodeClass.Annotations[awsv1.AnnotationEC2NodeClassHash]
	nodeClassHashVersion, foundNodeClassHashVersion := nodeClass.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]
	nodeClaimHash, foundNodeClaimHash := nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHash]
	nodeClaimHashVersion, foundNodeClaimHashVersion := nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]

	if !foundNodeClassHash || !foundNodeClaimHash || !foundNodeClassHashVersion || !foundNodeClaimHashVersion {
		return ""
	}
	// validate that the hash version for the EC2NodeClass is the same as the NodeClaim before evaluating for static drift
	if nodeClassHashVersion != nodeClaimHashVersion {
		return ""
	}
	return lo.Ternary(nodeClassHash != nodeClaimHash, NodeClassDrift, "")
}

// NodeClassDrift is the AWS provider's reason for static EC2NodeClass drift (pkg/cloudprovider/drift.go).
const NodeClassDrift cloudprovider.DriftReason = "NodeClassDrift"

type stamp struct {
	Hash    string `json:"hash"`
	Version string `json:"version"`
}

type request struct {
	Op          string            `json:"op"`
	Object      json.RawMessage   `json:"object"`
	CABundle    *string           `json:"caBundle"`
	Old         json.RawMessage   `json:"old"`
	New         json.RawMessage   `json:"new"`
	CABundleOld *string           `json:"caBundleOld"`
	CABundleNew *string           `json:"caBundleNew"`
	Claim       *stamp            `json:"claim"`
	ClaimLabels map[string]string `json:"claimLabels"`
}

type answer struct {
	Hash    string   `json:"hash,omitempty"`
	Version string   `json:"version,omitempty"`
	Reason  string   `json:"reason"`
	OldHash string   `json:"oldHash,omitempty"`
	NewHash string   `json:"newHash,omitempty"`
	Unknown []string `json:"unknown,omitempty"`
	Error   string   `json:"error,omitempty"`
}

var schemas = map[string]*structuralschema.Structural{}

func init() {
	for _, crd := range awsapis.CRDs {
		for _, v := range crd.Spec.Versions {
			if !v.Storage {
				continue
			}
			var internal apiext.JSONSchemaProps
			if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				panic(err)
			}
			s, err := structuralschema.NewStructural(&internal)
			if err != nil {
				panic(err)
			}
			schemas[crd.Spec.Names.Kind] = s
		}
	}
}

type kinded struct {
	Kind string `json:"kind"`
}

// admit applies what the API server applies to a created custom resource before storing it, and
// returns it as JSON with the unknown fields it pruned.
func admit(raw json.RawMessage) (string, []byte, []string, error) {
	var k kinded
	if err := json.Unmarshal(raw, &k); err != nil {
		return "", nil, nil, err
	}
	s, ok := schemas[k.Kind]
	if !ok {
		return "", nil, nil, fmt.Errorf("no CRD for kind %q", k.Kind)
	}
	var obj map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &obj); err != nil {
		return "", nil, nil, err
	}
	pruned := pruning.PruneWithOptions(obj, s, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	sort.Strings(pruned)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, s)
	structuraldefaulting.Default(obj, s)
	out, err := json.Marshal(obj)
	return k.Kind, out, pruned, err
}

func decode[T any](raw []byte) (*T, error) {
	var out T
	strict, err := sigsjson.UnmarshalStrict(raw, &out)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("strict decoding: %v", strict)
	}
	return &out, nil
}

type object struct {
	kind      string
	nodeClass *awsv1.EC2NodeClass
	nodePool  *karpv1.NodePool
	unknown   []string
}

func load(raw json.RawMessage) (*object, error) {
	kind, data, unknown, err := admit(raw)
	if err != nil {
		return nil, err
	}
	o := &object{kind: kind, unknown: unknown}
	switch kind {
	case "EC2NodeClass":
		o.nodeClass, err = decode[awsv1.EC2NodeClass](data)
	case "NodePool":
		o.nodePool, err = decode[karpv1.NodePool](data)
	default:
		err = fmt.Errorf("no hash for kind %q", kind)
	}
	return o, err
}

func (o *object) hash(caBundle *string) stamp {
	if o.nodeClass != nil {
		return stamp{o.nodeClass.Hash(caBundle), awsv1.EC2NodeClassHashVersion}
	}
	return stamp{o.nodePool.Hash(), karpv1.NodePoolHashVersion}
}

func drift(req request) (answer, error) {
	old, err := load(req.Old)
	if err != nil {
		return answer{}, fmt.Errorf("old: %w", err)
	}
	cur, err := load(req.New)
	if err != nil {
		return answer{}, fmt.Errorf("new: %w", err)
	}
	if old.kind != cur.kind {
		return answer{}, fmt.Errorf("old is a %s, new a %s", old.kind, cur.kind)
	}
	launched := old.hash(req.CABundleOld)
	current := cur.hash(req.CABundleNew)
	claimStamp := launched
	if req.Claim != nil {
		claimStamp = *req.Claim
	}
	ans := answer{OldHash: launched.Hash, NewHash: current.Hash, Version: current.Version,
		Unknown: append(old.unknown, cur.unknown...)}
	claim := &karpv1.NodeClaim{}
	claim.Labels = req.ClaimLabels
	if cur.nodeClass != nil {
		// Stamped at launch by the cloud provider's Create, refreshed on the class by the nodeclass hash controller.
		claim.Annotations = map[string]string{
			awsv1.AnnotationEC2NodeClassHash:        claimStamp.Hash,
			awsv1.AnnotationEC2NodeClassHashVersion: claimStamp.Version,
		}
		cur.nodeClass.Annotations = map[string]string{
			awsv1.AnnotationEC2NodeClassHash:        current.Hash,
			awsv1.AnnotationEC2NodeClassHashVersion: current.Version,
		}
		ans.Reason = string(nodeClassStaticDrift(claim, cur.nodeClass))
		return ans, nil
	}
	// Stamped at launch from the NodePool's annotations, which the nodepool hash controller keeps current.
	claim.Annotations = map[string]string{
		karpv1.NodePoolHashAnnotationKey:        claimStamp.Hash,
		karpv1.NodePoolHashVersionAnnotationKey: claimStamp.Version,
	}
	cur.nodePool.Annotations = map[string]string{
		karpv1.NodePoolHashAnnotationKey:        current.Hash,
		karpv1.NodePoolHashVersionAnnotationKey: current.Version,
	}
	checks := []cloudprovider.DriftReason{nodePoolStaticDrift(cur.nodePool, claim)}
	if req.ClaimLabels != nil {
		checks = append(checks, nodePoolRequirementsDrift(cur.nodePool, claim))
	}
	ans.Reason = string(lo.FindOrElse(checks, "", func(r cloudprovider.DriftReason) bool { return r != "" }))
	return ans, nil
}

// typeDesc is one Go type as hashstructure and encoding/json see it.
type typeDesc struct {
	Kind   string      `json:"kind"`             // struct, ptr, slice, map, string, bool, int, uint, float, interface
	Name   string      `json:"name,omitempty"`   // package-qualified name of a named type
	Elem   string      `json:"elem,omitempty"`   // ptr, slice, map: the element type's id
	Key    string      `json:"key,omitempty"`    // map: the key type's id
	JSON   bool        `json:"json,omitempty"`   // decoded by its own UnmarshalJSON
	String bool        `json:"string,omitempty"` // implements fmt.Stringer
	Time   bool        `json:"time,omitempty"`   // time.Time, hashed by MarshalBinary
	Fields []fieldDesc `json:"fields,omitempty"`
}

type fieldDesc struct {
	Go       string `json:"go"`
	JSON     string `json:"json"` // "" for an embedded field inlined by encoding/json, "-" for none
	Hash     string `json:"hash,omitempty"`
	Exported bool   `json:"exported"`
	Embedded bool   `json:"embedded,omitempty"`
	Type     string `json:"type"`
}

var (
	unmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	stringer    = reflect.TypeOf((*fmt.Stringer)(nil)).Elem()
)

func typeID(t reflect.Type) string {
	if t.Name() != "" {
		return t.PkgPath() + "." + t.Name()
	}
	return t.String()
}

func describe(t reflect.Type, seen map[string]typeDesc) string {
	id := typeID(t)
	if _, ok := seen[id]; ok {
		return id
	}
	d := typeDesc{Name: lo.Ternary(t.Name() != "", id, "")}
	seen[id] = d // placeholder against recursion
	d.JSON = t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler)
	d.String = t.Implements(stringer) || reflect.PointerTo(t).Implements(stringer)
	d.Time = id == "time.Time"
	switch t.Kind() {
	case reflect.Struct:
		d.Kind = "struct"
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" && !f.Anonymous {
				name = f.Name
			}
			d.Fields = append(d.Fields, fieldDesc{Go: f.Name, JSON: name, Hash: f.Tag.Get("hash"),
				Exported: f.PkgPath == "", Embedded: f.Anonymous, Type: describe(f.Type, seen)})
		}
	case reflect.Pointer:
		d.Kind, d.Elem = "ptr", describe(t.Elem(), seen)
	case reflect.Slice, reflect.Array:
		d.Kind, d.Elem = "slice", describe(t.Elem(), seen)
	case reflect.Map:
		d.Kind, d.Key, d.Elem = "map", describe(t.Key(), seen), describe(t.Elem(), seen)
	case reflect.String:
		d.Kind = "string"
	case reflect.Bool:
		d.Kind = "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		d.Kind = "int"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		d.Kind = "uint"
	case reflect.Float32, reflect.Float64:
		d.Kind = "float"
	default:
		d.Kind = t.Kind().String()
	}
	seen[id] = d
	return id
}

func types() map[string]any {
	seen := map[string]typeDesc{}
	modules := map[string]string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			switch dep.Path {
			case "github.com/aws/karpenter-provider-aws", "sigs.k8s.io/karpenter", "github.com/mitchellh/hashstructure/v2":
				modules[dep.Path] = dep.Version
			}
		}
	}
	return map[string]any{
		"modules": modules,
		"types": seen,
		"roots": map[string]string{
			"EC2NodeClass": describe(reflect.TypeOf(awsv1.EC2NodeClassSpec{}), seen),
			"NodePool":     describe(reflect.TypeOf(karpv1.NodeClaimTemplate{}), seen),
			// Not hashed: the whole NodePool spec, for generators of changes outside the template.
			"NodePoolSpec": describe(reflect.TypeOf(karpv1.NodePoolSpec{}), seen),
		},
		"versions": map[string]string{
			"EC2NodeClass": awsv1.EC2NodeClassHashVersion,
			"NodePool":     karpv1.NodePoolHashVersion,
		},
	}
}

func serve(req request) (answer, error) {
	switch req.Op {
	case "hash":
		o, err := load(req.Object)
		if err != nil {
			return answer{}, err
		}
		s := o.hash(req.CABundle)
		return answer{Hash: s.Hash, Version: s.Version, Unknown: o.unknown}, nil
	case "drift":
		return drift(req)
	}
	return answer{}, fmt.Errorf("unknown op %q", req.Op)
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		var req request
		ans, err := answer{}, json.Unmarshal(in.Bytes(), &req)
		if err == nil && req.Op == "types" {
			if err := enc.Encode(types()); err != nil {
				panic(err)
			}
			continue
		}
		if err == nil {
			ans, err = serve(req)
		}
		if err != nil {
			ans = answer{Error: err.Error()}
		}
		if err := enc.Encode(ans); err != nil {
			panic(err)
		}
	}
	if err := in.Err(); err != nil {
		panic(err)
	}
}
