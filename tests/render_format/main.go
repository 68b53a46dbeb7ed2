// Command reference writes, for every object in cases.json, the bytes the Kubernetes provider's render mode
// writes for it, using the same two calls as the provider's renderYaml (pulumi-kubernetes
// provider/pkg/provider/provider.go): Unstructured.MarshalJSON (a json.Encoder over the object, whose numbers
// are float64 as in every Pulumi property map) and sigs.k8s.io/yaml.JSONToYAML, at the versions
// k8s.io/apimachinery v0.34 requires. Its output, expected.json, is what tests/test_render_format.py compares
// nodefleet's serializer against. Regenerate with `python -m tests.render_format.regenerate`.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	raw, err := os.ReadFile("cases.json")
	if err != nil {
		panic(err)
	}
	// Decoding into interface{} makes every number a float64, as resource.PropertyMap.Mappable() does.
	var cases map[string]interface{}
	if err := json.Unmarshal(raw, &cases); err != nil {
		panic(err)
	}
	out := map[string]string{}
	for name, obj := range cases {
		var buf bytes.Buffer
		// unstructured.UnstructuredJSONScheme encodes an *Unstructured with json.NewEncoder(w).Encode.
		if err := json.NewEncoder(&buf).Encode(obj); err != nil {
			panic(fmt.Sprintf("%s: %v", name, err))
		}
		y, err := yaml.JSONToYAML(buf.Bytes())
		if err != nil {
			// The provider fails the same way ("failed to render YAML file").
			out[name] = "error: " + err.Error()
			continue
		}
		// go-yaml sorts map keys with a comparison that is not transitive for some keys (leading zeros in
		// digit runs next to letters), and Go's map order is random: then the provider's own output varies
		// from run to run. Such a case has no single expected output and is refused here.
		for i := 0; i < 30; i++ {
			again, _ := yaml.JSONToYAML(buf.Bytes())
			if !bytes.Equal(again, y) {
				panic(fmt.Sprintf("%s: the provider's output for this object varies from run to run", name))
			}
		}
		out[name] = string(y)
	}
	enc, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile("expected.json", append(enc, '\n'), 0o644); err != nil {
		panic(err)
	}
}
