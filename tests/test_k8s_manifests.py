"""deploy/k8s/: the class deployment on Kubernetes, checked offline (no cluster, no kubectl in CI).

* Every manifest (the base, and each overlay rendered here by a small kustomize: its resources, `labels`,
  `images` and strategic-merge patches of plain fields) passes ``kubernetes-validate --strict`` for named
  Kubernetes versions, and a misspelled field fails it (so the check can fail).
* The objects refer to each other correctly (Service and PDB selectors, Ingress backends, the autoscaler's
  target, probe ports), and the behaviour docs/deploy.md promises is in them (one Streamlit process and one
  PyTorch thread per pod, the shared cookie secret, non-root, maxUnavailable 0, preStop < grace period).
* One source of truth: deploy/compose.yaml, deploy/run_local.py (read with ``ast``), the Dockerfile and the
  manifests agree on the image, port, probe path, OMP_NUM_THREADS, CPU and memory limits, upload cap, cookie
  name and websocket timeout.

Skipped with a printed reason only when kubernetes_validate is not installed (requirements-dev.txt pins it).
"""
from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"
BASE = K8S / "base"
OVERLAYS = {"class": K8S / "overlays" / "class", "school": K8S / "overlays" / "school",
            "local-models": K8S / "overlays" / "local-models"}
CONTROLLER_CONFIG = K8S / "ingress-nginx" / "controller-configmap.yaml"
# The oldest Kubernetes still common in schools' and universities' managed clusters, and the newest schema
# kubernetes-validate ships. Both must accept every manifest.
VERSIONS = ("1.31.0", "1.37.0")
APP = "attention-explorer"

try:
    import kubernetes_validate
except ImportError as exc:  # pragma: no cover - CI installs it
    kubernetes_validate = None
    _REASON = f"kubernetes_validate is not installed ({exc}); pip install -r requirements-dev.txt"
    print(f"test_k8s_manifests: SKIPPED — {_REASON}")
else:
    _REASON = ""
needs_validator = pytest.mark.skipif(kubernetes_validate is None, reason=_REASON)


# --- a small kustomize -----------------------------------------------------------------------------------

KNOWN_KUSTOMIZE_KEYS = {"apiVersion", "kind", "resources", "labels", "patches", "images"}


def load_docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


# the lists a strategic-merge patch merges item by item, keyed by "name" (their patchMergeKey in the Kubernetes API)
NAMED_LISTS = {"containers", "initContainers", "env", "volumes", "volumeMounts"}


def merge(base: dict, patch: dict, where: str = "") -> dict:
    """Strategic merge as kustomize does it for the fields used here: maps merge key by key, a scalar replaces, and
    the lists of :data:`NAMED_LISTS` merge by ``name`` (an item of the patch merges into the base's item of that
    name, or is appended). Any other list is refused, so that what this merge does is what kustomize does."""
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, list):
            if key not in NAMED_LISTS or not all(isinstance(v, dict) and "name" in v for v in value):
                raise ValueError(f"patch at {where}{key}: only the lists {sorted(NAMED_LISTS)} merge (by name)")
            items = copy.deepcopy(out.get(key, []))
            for item in value:
                at = [i for i, old in enumerate(items) if old.get("name") == item["name"]]
                if at:
                    items[at[0]] = merge(items[at[0]], item, f"{where}{key}[{item['name']}].")
                else:
                    items.append(copy.deepcopy(item))
            out[key] = items
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value, f"{where}{key}.")
        else:
            out[key] = copy.deepcopy(value)
    return out


def _key(doc: dict) -> tuple:
    return doc["apiVersion"], doc["kind"], doc["metadata"]["name"]


def _set_image(doc: dict, images: list[dict]) -> None:
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        name, _, tag = c["image"].partition(":")
        for img in images:
            if img["name"] == name:
                c["image"] = f"{img.get('newName', name)}:{img.get('newTag', tag or 'latest')}"


def render(folder: Path) -> list[dict]:
    """The objects `kubectl apply -k folder` would create, for the kustomize features used here."""
    kust = yaml.safe_load((folder / "kustomization.yaml").read_text())
    unknown = set(kust) - KNOWN_KUSTOMIZE_KEYS
    if unknown:
        raise ValueError(f"{folder}: kustomization keys this renderer does not know: {sorted(unknown)}")
    docs: list[dict] = []
    for entry in kust.get("resources", []):
        path = (folder / entry).resolve()
        docs += render(path) if path.is_dir() else load_docs(path)
    for group in kust.get("labels", []):
        if group.get("includeSelectors") or group.get("includeTemplates"):
            raise ValueError("labels with includeSelectors/includeTemplates are not supported here")
        for doc in docs:
            doc["metadata"].setdefault("labels", {}).update(group["pairs"])
    for entry in kust.get("patches", []):
        if set(entry) != {"path"}:
            raise ValueError(f"{folder}: only `patches: - path: <strategic-merge patch>` is supported")
        for patch in load_docs(folder / entry["path"]):
            hits = [i for i, d in enumerate(docs) if _key(d) == _key(patch)]
            if len(hits) != 1:
                raise ValueError(f"{folder / entry['path']}: matches {len(hits)} objects, not 1: {_key(patch)}")
            docs[hits[0]] = merge(docs[hits[0]], patch)
    for doc in docs:
        _set_image(doc, kust.get("images", []))
    keys = [_key(d) for d in docs]
    if len(keys) != len(set(keys)):
        raise ValueError(f"{folder}: an object is defined twice")
    return docs


TARGETS = {"base": BASE, **OVERLAYS}


def rendered(target: str) -> list[dict]:
    return render(TARGETS[target])


def find(docs: list[dict], kind: str, name: str = APP) -> dict:
    hits = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(hits) == 1, (kind, name, len(hits))
    return hits[0]


def app_container(docs: list[dict]) -> dict:
    (container,) = find(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    return container


def env_of(container: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def k8s_bytes(quantity: str) -> int:
    """A Kubernetes memory quantity (2Gi, 1536Mi, 2G) in bytes."""
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|k|M|G)?", str(quantity))
    assert m, quantity
    return int(m.group(1)) * {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 10**3, "M": 10**6,
                              "G": 10**9}[m.group(2)]


def binary_bytes(size: str) -> int:
    """A compose/Docker (1536m, 2g) or nginx (64k) size in bytes: k, m, g are binary there."""
    m = re.fullmatch(r"(\d+)([kmg]?)b?", str(size).strip().lower())
    assert m, size
    return int(m.group(1)) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}[m.group(2)]


def cores_of(quantity) -> float:
    q = str(quantity)
    return int(q[:-1]) / 1000 if q.endswith("m") else float(q)


# --- validation ----------------------------------------------------------------------------------------

def validate_all(docs: list[dict], version: str) -> None:
    for doc in docs:
        kubernetes_validate.validate(doc, version, strict=True)


@needs_validator
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_manifests_validate_strict(target, version):
    docs = rendered(target)
    kinds = sorted(d["kind"] for d in docs)
    # two ConfigMaps: the static server's nginx settings, and the response headers the Ingress controller adds
    # local-models adds the list of models (a ConfigMap) and the volume that holds them
    extra = ["ConfigMap", "PersistentVolumeClaim"] if target == "local-models" else []
    assert kinds == sorted(["Deployment", "Deployment", "Service", "Service", "ConfigMap", "ConfigMap", "Ingress",
                            "Ingress", "HorizontalPodAutoscaler", "PodDisruptionBudget", "PodDisruptionBudget",
                            *extra]), kinds
    validate_all(docs, version)


@needs_validator
@pytest.mark.parametrize("version", VERSIONS)
def test_every_yaml_file_validates_strict(version):
    """Each file on its own, as `kubectl apply -f` would read it (patches are checked rendered, above)."""
    files = sorted(K8S.rglob("*.yaml"))
    checked = 0
    for path in files:
        if path.name == "kustomization.yaml" or path.parent.parent.name == "overlays":
            continue
        validate_all(load_docs(path), version)
        checked += 1
    assert checked == 5, [str(f.relative_to(K8S)) for f in files]


@needs_validator
@pytest.mark.parametrize("field_path, wrong", [
    (("spec", "template", "spec", "containers", 0, "readinessProbe"), "readinessprobe"),   # a nested typo
    (("spec", "strategy", "rollingUpdate", "maxUnavailable"), "maxUnavailible"),
    (("spec", "template", "spec", "terminationGracePeriodSeconds"), "terminationGracePeriodSecond"),
])
def test_a_misspelled_field_fails_validation(field_path, wrong):
    """The check can fail: a misspelled field name is refused by --strict (and passes without it)."""
    deployment = copy.deepcopy(find(rendered("class"), "Deployment"))
    parent = deployment
    for step in field_path[:-1]:
        parent = parent[step]
    parent[wrong] = parent.pop(field_path[-1])
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, VERSIONS[0], strict=True)
    kubernetes_validate.validate(deployment, VERSIONS[0], strict=False)


@needs_validator
def test_a_wrong_type_fails_validation():
    hpa = copy.deepcopy(find(rendered("school"), "HorizontalPodAutoscaler"))
    hpa["spec"]["minReplicas"] = "thirteen"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(hpa, VERSIONS[0], strict=True)


def test_the_renderer_refuses_what_it_cannot_do(tmp_path):
    """Patches with lists, and kustomize features it does not implement, are errors, not silent no-ops."""
    with pytest.raises(ValueError, match="lists"):
        merge({"spec": {"a": 1}}, {"spec": {"args": ["--x"]}})
    (tmp_path / "kustomization.yaml").write_text("resources: []\nnamePrefix: x-\n")
    with pytest.raises(ValueError, match="namePrefix"):
        render(tmp_path)
    (tmp_path / "kustomization.yaml").write_text(f"resources: [{BASE}]\npatches: [{{path: p.yaml}}]\n")
    (tmp_path / "p.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: nope}\n")
    with pytest.raises(ValueError, match="matches 0"):
        render(tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{BASE}]\nimages: [{{name: {APP}, newName: reg.example/ae, newTag: v1}}]\n")
    docs = render(tmp_path)
    assert app_container(docs)["image"] == "reg.example/ae:v1"
    static = find(docs, "Deployment", f"{APP}-static")["spec"]["template"]["spec"]
    assert static["initContainers"][0]["image"] == "reg.example/ae:v1"


# --- what the objects say --------------------------------------------------------------------------------

@pytest.mark.parametrize("target", sorted(TARGETS))
def test_objects_refer_to_each_other(target):
    docs = rendered(target)
    deployments = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    for dep in deployments.values():
        pod_labels = dep["spec"]["template"]["metadata"]["labels"]
        assert dep["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
        for c in dep["spec"]["template"]["spec"]["containers"]:
            ports = {p["name"] for p in c["ports"]}
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                if probe in c:
                    assert c[probe]["httpGet"]["port"] in ports, (c["name"], probe)
    for svc in services.values():
        matching = [d for d in deployments.values()
                    if svc["spec"]["selector"].items() <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert len(matching) == 1, svc["metadata"]["name"]
        (c,) = matching[0]["spec"]["template"]["spec"]["containers"]
        assert {p["targetPort"] for p in svc["spec"]["ports"]} <= {p["name"] for p in c["ports"]}
    for ing in (d for d in docs if d["kind"] == "Ingress"):
        assert ing["spec"]["ingressClassName"] == "nginx"
        for rule in ing["spec"]["rules"]:
            for path in rule["http"]["paths"]:
                backend = path["backend"]["service"]
                assert backend["port"]["name"] in {p["name"] for p in services[backend["name"]]["spec"]["ports"]}
        fallback = ing["metadata"].get("annotations", {}).get("nginx.ingress.kubernetes.io/default-backend")
        assert fallback is None or fallback in services
    hpa = find(docs, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": APP}
    for pdb in (d for d in docs if d["kind"] == "PodDisruptionBudget"):
        targets = [d for d in deployments.values() if pdb["spec"]["selector"]["matchLabels"].items()
                   <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert len(targets) == 1, pdb["metadata"]["name"]
    configmaps = {d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"}
    for dep in deployments.values():
        for vol in dep["spec"]["template"]["spec"].get("volumes", []):
            if "configMap" in vol:
                assert vol["configMap"]["name"] in configmaps


def test_app_deployment_does_what_the_docs_say():
    docs = rendered("base")
    dep = find(docs, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    c = app_container(docs)
    assert "replicas" not in dep["spec"], "the autoscaler owns the count; replicas would reset it on each apply"
    assert dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    # one Streamlit process per pod: the image's own CMD, no command/args override, one container
    assert "command" not in c and "args" not in c and len(pod["containers"]) == 1
    env = env_of(c)
    assert env["OMP_NUM_THREADS"] == "1"
    secret = env["STREAMLIT_SERVER_COOKIE_SECRET"]["secretKeyRef"]
    assert not secret.get("optional", False), "pods must not start without the shared secret"
    assert not [d for d in docs if d["kind"] == "Secret"], "no secret value in git: it is created on the cluster"
    doc = (ROOT / "docs" / "deploy.md").read_text()
    assert f"kubectl create secret generic {secret['name']}" in doc and f"--from-literal={secret['key']}=" in doc
    assert "kubectl apply -k deploy/k8s/overlays/class" in doc
    # non-root, nothing written to the image
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] > 0
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert env["HOME"] == "/tmp" and {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"]
    # Guaranteed QoS
    assert c["resources"]["requests"] == c["resources"]["limits"]
    # drain: the preStop sleep ends well inside the grace period
    sleep = int(c["lifecycle"]["preStop"]["exec"]["command"][1])
    assert c["lifecycle"]["preStop"]["exec"]["command"][0] == "sleep"
    assert 5 <= sleep and sleep + 15 <= pod["terminationGracePeriodSeconds"]
    # the startup probe allows far more than the measured ~1-2 s to /_stcore/health
    sp = c["startupProbe"]
    assert sp["periodSeconds"] * sp["failureThreshold"] >= 30
    for d in (d for d in docs if d["kind"] == "Deployment"):
        for cc in d["spec"]["template"]["spec"]["containers"] + d["spec"]["template"]["spec"].get("initContainers", []):
            assert {"requests", "limits"} <= set(cc["resources"]), cc["name"]


def test_ingress_is_sticky_for_the_app_and_not_for_static_files():
    docs = rendered("base")
    app = find(docs, "Ingress")["metadata"]["annotations"]
    assert app["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    assert app["nginx.ingress.kubernetes.io/affinity-mode"] == "persistent"
    static = find(docs, "Ingress", f"{APP}-static")
    assert not any("affinity" in k or "session-cookie" in k for k in static["metadata"]["annotations"])
    paths = [p["path"] for p in static["spec"]["rules"][0]["http"]["paths"]]
    assert paths == ["/static/", "/app/static/plotly/"]  # Streamlit's files and our chart element's plotly.js
    conf = find(docs, "ConfigMap", f"{APP}-static-nginx")["data"]["default.conf"]
    assert all(f"location {p} {{" in conf for p in paths)
    text = (BASE / "ingress.yaml").read_text()
    for key in app:  # every annotation is explained by a comment somewhere above it
        before = text[:text.index(key)]
        assert re.search(r"\n\s*#[^\n]*\n\s*(nginx\.ingress[^\n]*\n\s*)*$", before), key


def test_overlays_size_what_the_docs_say():
    for target, lo, hi in (("class", 2, 3), ("school", 13, 20)):
        hpa = find(rendered(target), "HorizontalPodAutoscaler")["spec"]
        assert (hpa["minReplicas"], hpa["maxReplicas"]) == (lo, hi), target
        assert hpa["metrics"][0]["resource"]["target"]["averageUtilization"] == 50
    doc = (ROOT / "docs" / "deploy.md").read_text()
    section = doc[doc.index("## On Kubernetes"):]
    assert "minReplicas 13" in section and "averageUtilization: 50" in section


def test_controller_config_holds_the_longest_link():
    """large-client-header-buffers: one buffer holds a request line with the longest text the app takes."""
    (cm,) = load_docs(CONTROLLER_CONFIG)
    count, size = cm["data"]["large-client-header-buffers"].split()
    size_bytes = binary_bytes(size)
    max_chars = None
    for path in (ROOT / "ui").rglob("*.py"):
        m = re.search(r"(?m)^MAX_CHARS\s*=\s*([\d_]+)", path.read_text())
        if m:
            max_chars = int(m.group(1).replace("_", ""))
    assert max_chars, "MAX_CHARS (the text area's limit) not found under ui/"
    # 12 = a 4-byte UTF-8 character percent-encoded (%F0%9F%98%80); 4 KB for the rest of the line and query
    assert int(count) >= 2 and size_bytes >= max_chars * 12 + 4096, (max_chars, size_bytes)


# --- one source of truth: compose, run_local, Dockerfile, manifests ---------------------------------------

def _compose_app() -> dict:
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    apps = [s for n, s in compose["services"].items() if re.fullmatch(r"app\d+", n)]
    assert apps
    return apps[0]


def _run_local() -> tuple[dict, set[str]]:
    """run_local.py read with ast, not imported: its REPLICA_ENV and every string it holds."""
    tree = ast.parse((ROOT / "deploy" / "run_local.py").read_text())
    env = None
    strings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "REPLICA_ENV" for t in node.targets):
            env = ast.literal_eval(node.value)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value)
    assert env is not None, "REPLICA_ENV not found in deploy/run_local.py"
    return env, strings


def test_compose_run_local_dockerfile_and_manifests_agree():
    compose = _compose_app()
    replica_env, run_local_strings = _run_local()
    dockerfile = (ROOT / "Dockerfile").read_text()
    for target in sorted(TARGETS):
        docs = rendered(target)
        c = app_container(docs)
        env = env_of(c)
        # image: the one compose builds (an overlay's `images:` may rename it for a registry; none does here)
        assert c["image"] == compose["image"], target
        static = find(docs, "Deployment", f"{APP}-static")["spec"]["template"]["spec"]
        assert static["initContainers"][0]["image"] == compose["image"]
        # port
        (port,) = c["ports"]
        assert str(port["containerPort"]) in [str(p) for p in compose["expose"]]
        assert re.search(rf"(?m)^EXPOSE\s+{port['containerPort']}\b", dockerfile)
        assert f"--server.port={port['containerPort']}" in dockerfile
        # probe path
        paths = {c[p]["httpGet"]["path"] for p in ("startupProbe", "readinessProbe", "livenessProbe")}
        assert len(paths) == 1
        (path,) = paths
        assert path in " ".join(compose["healthcheck"]["test"])
        assert any(path in s for s in run_local_strings), "run_local.py waits on another health path"
        assert path in dockerfile
        # liveness = compose's healthcheck (interval, timeout, retries)
        live = c["livenessProbe"]
        hc = compose["healthcheck"]
        assert (f"{live['periodSeconds']}s", f"{live['timeoutSeconds']}s", live["failureThreshold"]) == \
            (hc["interval"], hc["timeout"], hc["retries"])
        # the replica environment: OMP_NUM_THREADS (and anything else REPLICA_ENV adds) and the secret's name
        for name, value in replica_env.items():
            if target == "local-models" and name == "AE_MEMORY_LIMIT_MB":
                continue  # raised with its pods' memory for the checkpoints (its own test)
            assert env.get(name) == value == str(compose["environment"][name]), name
        assert "STREAMLIT_SERVER_COOKIE_SECRET" in compose["environment"]
        assert "STREAMLIT_SERVER_COOKIE_SECRET" in run_local_strings
        # CPU: one core per replica everywhere
        limits = compose["deploy"]["resources"]["limits"]
        assert cores_of(c["resources"]["limits"]["cpu"]) == float(limits["cpus"]) == 1.0
    # the ingress and nginx.conf: cookie name, upload cap, websocket timeout
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    ann = find(rendered("base"), "Ingress")["metadata"]["annotations"]
    assert f"{ann['nginx.ingress.kubernetes.io/session-cookie-name']}=$request_id" in conf
    upload_mb = int(re.search(r"(?m)^maxUploadSize\s*=\s*(\d+)", (ROOT / ".streamlit" / "config.toml")
                              .read_text()).group(1))
    assert ann["nginx.ingress.kubernetes.io/proxy-body-size"] == f"{upload_mb}m"
    assert f"client_max_body_size {upload_mb}m;" in conf
    for direction in ("read", "send"):
        seconds = int(ann[f"nginx.ingress.kubernetes.io/proxy-{direction}-timeout"])
        assert f"proxy_{direction}_timeout 1h;" in conf and seconds == 3600


def test_memory_limit_has_room_for_the_smollm2_target():
    """The SmolLM2-135M page targets <= 1.5 GB RSS with every page visited; one 32 MB upload being parsed adds
    ~0.25 GB (docs/deploy.md). The pod's limit holds both."""
    limit = k8s_bytes(app_container(rendered("base"))["resources"]["limits"]["memory"])
    assert limit >= 1.5e9 + 0.25e9


def test_memory_limit_agrees_with_compose():
    limit = k8s_bytes(app_container(rendered("base"))["resources"]["limits"]["memory"])
    assert limit == binary_bytes(_compose_app()["deploy"]["resources"]["limits"]["memory"])


def test_the_app_is_told_its_memory_limit_as_the_container_has_it():
    """ui/shell/heavy.py checks a large computation against AE_MEMORY_LIMIT_MB: it must be the pod's and compose's
    memory limit (a larger number would let a replica be killed, a smaller one refuse work that fits)."""
    container = app_container(rendered("base"))
    limit = k8s_bytes(container["resources"]["limits"]["memory"])
    assert int(env_of(container)["AE_MEMORY_LIMIT_MB"]) * 2**20 == limit
    assert int(_compose_app()["environment"]["AE_MEMORY_LIMIT_MB"]) * 2**20 == limit


def test_static_init_container_calls_precompress_as_it_is():
    """The init container's one-liner parses and calls deploy/precompress_static.py's build(dest, workers=…)."""
    static = find(rendered("base"), "Deployment", f"{APP}-static")["spec"]["template"]["spec"]
    (init,) = static["initContainers"]
    assert init["command"][:2] == ["python", "-c"]
    calls = [n for n in ast.walk(ast.parse(init["command"][2])) if isinstance(n, ast.Call)
             and getattr(n.func, "attr", "") == "build"]
    assert len(calls) == 1 and [k.arg for k in calls[0].keywords] == ["workers"]
    tree = ast.parse((ROOT / "deploy" / "precompress_static.py").read_text())
    (build,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build"]
    assert [a.arg for a in build.args.args][:2] == ["dest", "workers"]
    # nginx serves what the init container wrote: the build's dest is nginx's root
    conf = find(rendered("base"), "ConfigMap", f"{APP}-static-nginx")["data"]["default.conf"]
    dest = re.search(r"Path\('([^']+)'\)", init["command"][2]).group(1)
    assert f"root {dest};" in conf
    mounts = {m["mountPath"] for m in init["volumeMounts"]}
    assert any(dest.startswith(m + "/") for m in mounts), "the build writes outside its volume"


def test_static_nginx_config_passes_nginx_t(tmp_path):
    """The static pods' server block, inside a minimal main config, passes `nginx -t` (Debian's nginx; the
    app's Service name, resolvable only in the cluster, is replaced by loopback)."""
    import shutil
    import subprocess

    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if nginx is None:
        print("test_static_nginx_config_passes_nginx_t: SKIPPED — nginx is not installed")
        pytest.skip("nginx is not installed (Debian: apt-get install -y nginx; .ci/run installs it)")
    conf = find(rendered("base"), "ConfigMap", f"{APP}-static-nginx")["data"]["default.conf"]
    assert "proxy_pass http://attention-explorer:8501;" in conf
    conf = conf.replace("http://attention-explorer:8501", "http://127.0.0.1:8501")
    (tmp_path / "tmp").mkdir()
    main = tmp_path / "nginx.conf"
    main.write_text(f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\nhttp {{\n"
                    f"client_body_temp_path {tmp_path}/tmp/b; proxy_temp_path {tmp_path}/tmp/p;\n"
                    f"access_log off;\n{conf}\n}}\n")
    out = subprocess.run([nginx, "-t", "-p", str(tmp_path), "-c", str(main)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_the_image_runs_as_the_user_the_pods_ask_for():
    """The Dockerfile's USER is the pods' runAsUser: a pod with runAsNonRoot refuses an image whose user is root only
    when it names none, so the two must agree for compose (no securityContext) to run without rights too."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    users = re.findall(r"(?m)^USER (\S+)", dockerfile)
    assert users, "the Dockerfile sets no USER: the container runs as root"
    run_as = find(rendered("base"), "Deployment")["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    assert users[-1] == str(run_as), (users, run_as)
    assert "chown 10001:10001 /srv/streamlit-static" in dockerfile  # compose's static job writes there


def test_no_other_site_may_frame_the_app():
    """The app's Ingress sends X-Frame-Options: SAMEORIGIN and CSP frame-ancestors 'self' (ingress-nginx's
    custom-headers: a ConfigMap of the Ingress's namespace, named "namespace/name", whose headers the controller's
    global-allowed-response-headers must list and whose names and values must match its patterns)."""
    docs = rendered("class")
    app = find(docs, "Ingress")["metadata"]["annotations"]
    namespace, name = app["nginx.ingress.kubernetes.io/custom-headers"].split("/")
    headers = find(docs, "ConfigMap", name)["data"]
    assert headers == {"X-Frame-Options": "SAMEORIGIN", "Content-Security-Policy": "frame-ancestors 'self'"}
    assert f"kubectl create namespace {namespace}" in (ROOT / "docs" / "deploy.md").read_text()
    (cm,) = load_docs(CONTROLLER_CONFIG)
    allowed = cm["data"]["global-allowed-response-headers"].split(",")
    for header, value in headers.items():  # ingress-nginx's annotations/customheaders patterns
        assert header in allowed and re.fullmatch(r"[a-zA-Z\d\-_]+", header)
        assert re.fullmatch(r"""[a-zA-Z\d_ :;.,\\/"'?!(){}\[\]@<>=\-+*#$&`|~^%]+""", value)
    static = find(docs, "Ingress", f"{APP}-static")["metadata"]["annotations"]
    assert "nginx.ingress.kubernetes.io/custom-headers" not in static  # scripts and styles are not framed


def test_the_local_models_overlay_offers_what_its_configmap_lists_from_a_read_only_volume():
    """overlays/local-models: the operator's list (ui/llm/catalog.py, AE_LLM_MODELS) comes from a ConfigMap, its
    paths lie on a read-only volume, and the pod's memory limit is what the app is told (docs/deploy.md)."""
    docs = rendered("local-models")
    container = app_container(docs)
    env = env_of(container)
    ref = env["AE_LLM_MODELS"]["configMapKeyRef"]
    listed = find(docs, "ConfigMap", ref["name"])["data"][ref["key"]]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "models")
    assert mount["readOnly"] is True
    from ui.llm.catalog import parse

    choices = parse(listed)
    assert len(choices) >= 2 and choices[0].is_smollm2
    assert all(c.is_smollm2 or c.source.startswith(mount["mountPath"] + "/") for c in choices), listed
    pod = find(docs, "Deployment")["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "models")
    claim = find(docs, "PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])
    assert volume["persistentVolumeClaim"]["readOnly"] is True and "ReadOnlyMany" in claim["spec"]["accessModes"]
    limit = k8s_bytes(container["resources"]["limits"]["memory"])
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert int(env["AE_MEMORY_LIMIT_MB"]) * 2**20 == limit > k8s_bytes("3Gi")
    # the base's own entries survive the merge by name
    assert {"tmp", "models"} <= {v["name"] for v in pod["volumes"]} and env["OMP_NUM_THREADS"] == "1"
    doc = (ROOT / "docs" / "deploy.md").read_text()
    assert "AE_LLM_MODELS" in doc and "kubectl apply -k deploy/k8s/overlays/local-models" in doc


def test_a_patch_of_another_list_is_refused():
    with pytest.raises(ValueError, match="only the lists"):
        merge({"spec": {"ports": [{"name": "a"}]}}, {"spec": {"ports": [{"name": "b"}]}})
    assert merge({"env": [{"name": "A", "value": "1"}]}, {"env": [{"name": "B", "value": "2"}]}) == {
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
