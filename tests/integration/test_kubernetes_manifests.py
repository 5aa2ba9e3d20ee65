"""deploy/kubernetes/: the manifests parse, fit together (names, ports, probes, grace periods),
and the gateway config inside the ConfigMap loads (`warmroute serve --check-config`)."""
import os
import unittest

import yaml

from gateway_process import run_serve

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DIR = os.path.join(ROOT, "deploy", "kubernetes")


def load_all():
    """{(kind, name): document} over every manifest file."""
    docs = {}
    for name in sorted(os.listdir(DIR)):
        if not name.endswith(".yaml"):
            continue
        with open(os.path.join(DIR, name)) as f:
            for doc in yaml.safe_load_all(f):
                if doc is None:
                    continue
                for key in ("apiVersion", "kind", "metadata"):
                    assert key in doc, f"{name}: a document without {key}"
                docs[(doc["kind"], doc["metadata"]["name"])] = doc
    return docs


class KubernetesManifestsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = load_all()
        cls.config_text = cls.docs[("ConfigMap", "warmroute")]["data"]["warmroute.yaml"]
        cls.config = yaml.safe_load(cls.config_text)

    def test_the_configmaps_config_loads(self):
        code, out, err = run_serve(self.config_text, ["--check-config"])
        self.assertEqual(code, 0, out + err)
        self.assertIn("config OK (0 backends", out)
        self.assertIn("backends from DNS vllm-engines.default.svc.cluster.local:8000", out)
        # The check is a real one: the same config without the engines' port is refused.
        broken = self.config_text.replace("svc.cluster.local:8000", "svc.cluster.local")
        code, out, err = run_serve(broken, ["--check-config"])
        self.assertEqual(code, 2, out + err)

    def test_every_kind_the_readme_promises_is_there(self):
        kinds = {kind for kind, _ in self.docs}
        for kind in ("ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "StatefulSet",
                     "ScaledObject"):
            self.assertIn(kind, kinds)
        with open(os.path.join(DIR, "README.md")) as f:
            readme = f.read()
        for name in os.listdir(DIR):
            if name.endswith(".yaml"):
                self.assertIn(name, readme)

    def test_the_gateway_deployment_matches_its_config(self):
        deployment = self.docs[("Deployment", "warmroute")]
        pod = deployment["spec"]["template"]
        container = pod["spec"]["containers"][0]
        port = self.config["listen"]["port"]
        self.assertEqual(self.config["listen"]["host"], "0.0.0.0")  # reachable from the Service
        self.assertEqual(container["ports"][0]["containerPort"], port)
        self.assertEqual(pod["metadata"]["annotations"]["prometheus.io/port"], str(port))
        self.assertEqual(container["readinessProbe"]["httpGet"]["path"], "/health")
        self.assertIn("tcpSocket", container["livenessProbe"])
        # The config is mounted where the args read it.
        mount = container["volumeMounts"][0]["mountPath"]
        self.assertIn(os.path.join(mount, "warmroute.yaml"), container["args"])
        self.assertEqual(pod["spec"]["volumes"][0]["configMap"]["name"], "warmroute")
        # SIGTERM lets streams finish before the kubelet kills the pod.
        self.assertGreater(pod["spec"]["terminationGracePeriodSeconds"] * 1000,
                           self.config["listen"]["shutdown_grace_ms"])
        pdb = self.docs[("PodDisruptionBudget", "warmroute")]
        self.assertLess(pdb["spec"]["minAvailable"], deployment["spec"]["replicas"])
        service = self.docs[("Service", "warmroute")]
        self.assertEqual(service["spec"]["selector"], deployment["spec"]["selector"]["matchLabels"])

    def test_discovery_finds_the_pods_of_the_engines_statefulset(self):
        engines = self.docs[("StatefulSet", "vllm")]
        headless = self.docs[("Service", engines["spec"]["serviceName"])]
        self.assertEqual(headless["spec"]["clusterIP"], "None")
        self.assertFalse(headless["spec"]["publishNotReadyAddresses"])
        ports = {p["name"]: p["port"] for p in headless["spec"]["ports"]}
        self.assertNotIn("backends", self.config)
        discovery = self.config["discovery"]
        service = headless["metadata"]["name"]
        self.assertEqual(discovery["dns"], f"{service}.default.svc.cluster.local:{ports['http']}")
        self.assertEqual(discovery["kv_events"]["endpoint"], f"tcp://{{host}}:{ports['kv-events']}")
        self.assertEqual(discovery["kv_events"]["replay_endpoint"],
                         f"tcp://{{host}}:{ports['kv-replay']}")
        args = " ".join(engines["spec"]["template"]["spec"]["containers"][0]["args"])
        self.assertIn(f'"endpoint": "tcp://*:{ports["kv-events"]}"', args)
        self.assertIn(f'"replay_endpoint": "tcp://*:{ports["kv-replay"]}"', args)


if __name__ == "__main__":
    unittest.main()
