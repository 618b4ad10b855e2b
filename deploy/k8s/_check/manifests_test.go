// Package check renders deploy/k8s and decodes every object strictly into
// Kubernetes' own API types (k8s.io/api: an unknown or misspelt field is
// an error), then checks what the fleet run relies on. Its own module, so
// that ckbench does not depend on k8s.io:
//
//	cd deploy/k8s/_check && go test
package check

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// render runs render.sh with args and returns its YAML documents.
func render(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("../render.sh", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("render.sh %v: %v\n%s", args, err, out)
	}
	var docs []string
	for _, d := range strings.Split(string(out), "\n---\n") {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, d)
		}
	}
	return docs
}

// strict decodes a YAML document into v, refusing unknown fields.
func strict(t *testing.T, doc string, v any) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("not YAML: %v\n%s", err, doc)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("not a valid object: %v\n%s", err, doc)
	}
}

func kind(t *testing.T, doc string) string {
	var m struct{ Kind string }
	j, _ := yaml.YAMLToJSON([]byte(doc))
	json.Unmarshal(j, &m)
	return m.Kind
}

func TestFleetManifests(t *testing.T) {
	docs := render(t, "--nodes", "4", "--image", "registry.example/ckbench:0.1", "--cpus", "8", "--memory", "16Gi",
		"--campaign", "c1", "--sku", "genoa-9654", "--args", "--preset quick --threads 1,all")
	if len(docs) != 3 {
		t.Fatalf("%d documents, want the claim and two jobs", len(docs))
	}
	var pvc corev1.PersistentVolumeClaim
	var fleet, cmp batchv1.Job
	for _, d := range docs {
		if strings.Contains(d, "${") {
			t.Errorf("an unrendered variable:\n%s", d)
		}
		switch kind(t, d) {
		case "PersistentVolumeClaim":
			strict(t, d, &pvc)
		case "Job":
			if strings.Contains(d, "ckbench-compare-") {
				strict(t, d, &cmp)
			} else {
				strict(t, d, &fleet)
			}
		default:
			t.Errorf("unexpected kind %q", kind(t, d))
		}
	}
	if pvc.Spec.AccessModes[0] != corev1.ReadWriteMany {
		t.Errorf("claim access %v: every node writes it", pvc.Spec.AccessModes)
	}
	s := fleet.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 4 || *s.Parallelism != 4 {
		t.Errorf("fleet job: want Indexed, 4 completions, 4 in parallel: %+v", s)
	}
	aa := s.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(aa) != 1 || aa[0].TopologyKey != "kubernetes.io/hostname" || aa[0].LabelSelector.MatchLabels["ckbench.dev/campaign"] != "c1" ||
		s.Template.Labels["ckbench.dev/campaign"] != "c1" {
		t.Errorf("one pod per node needs required anti-affinity on the hostname over the campaign's pods: %+v", aa)
	}
	if s.Template.Spec.NodeSelector["ckbench.dev/sku"] != "genoa-9654" {
		t.Errorf("node selector %v", s.Template.Spec.NodeSelector)
	}
	c := s.Template.Spec.Containers[0]
	req, lim := c.Resources.Requests, c.Resources.Limits
	if !req.Cpu().Equal(*lim.Cpu()) || !req.Memory().Equal(*lim.Memory()) || req.Cpu().MilliValue() != 8000 {
		t.Errorf("requests %v, limits %v: want equal, whole CPUs (Guaranteed, pinned by the static CPU manager)", req, lim)
	}
	if len(c.Env) == 0 || c.Env[0].Name != "CKBENCH_HOST" || c.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("CKBENCH_HOST must come from spec.nodeName: %+v", c.Env)
	}
	if cmd := strings.Join(c.Args, " "); !strings.Contains(cmd, "ckbench sweep all --preset quick --threads 1,all") ||
		!strings.Contains(cmd, `--out "/results/$CKBENCH_HOST"`) || !strings.Contains(cmd, `--run-id "c1-$JOB_COMPLETION_INDEX"`) {
		t.Errorf("fleet command %q", cmd)
	}
	for _, j := range []batchv1.Job{fleet, cmp} {
		ps := j.Spec.Template.Spec
		if ps.RestartPolicy != corev1.RestartPolicyNever || ps.Volumes[0].PersistentVolumeClaim.ClaimName != pvc.Name ||
			ps.Containers[0].VolumeMounts[0].MountPath != "/results" {
			t.Errorf("%s: restart Never, the claim at /results: %+v", j.Name, ps)
		}
	}
	if cmd := strings.Join(cmp.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(cmd, "ckbench compare --fleet /results/*/c1-*") ||
		!strings.Contains(cmd, "ckbench report /results/*/c1-* --out /results/fleet-c1/report") {
		t.Errorf("compare command %q", cmd)
	}
}

func TestRenderBadInput(t *testing.T) {
	for _, args := range [][]string{{"--nodes", "0"}, {"--cpus", "1.5"}, {"--bogus", "x"}} {
		if out, err := exec.Command("../render.sh", args...).CombinedOutput(); err == nil {
			t.Errorf("render.sh %v accepted: %s", args, out)
		}
	}
}
