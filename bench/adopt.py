"""How long ``import`` takes for a fleet of hosted clusters read from files: N HostedClusters with three AWS
NodePools each, in the shape ``hypershift create cluster aws --render`` prints them (HyperShift's own fixture,
``tests/fixtures/hypershift-cli-v0.1.80``, one file per cluster, each with its Namespace and pull Secret).

Two figures per size: the import itself in this process (reading the files, building the stack, rendering it
and comparing the render with every live object), and ``python -m nodefleet import`` as a user runs it, a
process of its own that also writes the stack file and checks it with every policy of the pack (the mock
runtime, as ``check`` does), and the registry entry of their management cluster (``--management-cluster``).
Wall time and the CPU seconds of the command and every process it started (the fork server ``fleet check``
forks its stacks from included), which other work on a shared machine sways less, are reported.

    venv/bin/python -m bench.adopt                  # 10 and 100 clusters
    venv/bin/python -m bench.adopt --sizes 100 --json
    venv/bin/python -m bench.adopt --per-cluster    # one stack per cluster (--stack {cluster}), `fleet check`
    venv/bin/python -m bench.adopt --per-cluster --beside stacks/Pulumi.dev.yaml stacks/Pulumi.rhel10.yaml
                                                    # into a folder that already holds those stacks
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from nodefleet.adopt.documents import read_documents
from nodefleet.adopt.importer import ImportOptions, adopt

PROJECT = Path(__file__).resolve().parent.parent
FIXTURE = (
    PROJECT
    / "tests"
    / "fixtures"
    / "hypershift-cli-v0.1.80"
    / "zz_fixture_TestCreateCluster_default_creation_flags_for_cesar.yaml"
)
ACCOUNT = "123456789012"
ZONES = ("a", "b", "c")
#: The registry name the import is given (``--management-cluster``): the registry entry it writes.
MANAGEMENT_CLUSTER = "mgmt-bench"


def _cluster(i: int, template: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cluster ``i``: the fixture's objects with its placeholders given this cluster's values, and its one
    NodePool made three (one per zone, as `--render` with three zones prints them)."""
    name, infra = f"c{i:03d}", f"c{i:03d}-{i:05x}"
    region = "us-east-2"
    values = {
        "cesar": name,
        "fakeVPCID": f"vpc-{i:017x}",
        "fakeName": f"{region}a",
        "fakeSubnetID": f"subnet-{i:017x}",
        "fakeInfraID": infra,
        "fakeIssuerURL": f"https://{name}-oidc.s3.{region}.amazonaws.com/{infra}",
        "fakeBaseDomainPrefix": name,
        "fakeBaseDomain": "example.com",
        "fakePublicZoneID": "Z0PUBLIC0000000000000",
        "fakePrivateZoneID": "Z0PRIVATE000000000000",
        "fakeProxyAddr": "http://proxy.example.com:3128",
        "fakeKMSKeyARN": f"arn:aws:kms:{region}:{ACCOUNT}:key/0a1b2c3d-0000-4000-8000-{i:012x}",
        "fakeKMSProviderRoleARN": f"arn:aws:iam::{ACCOUNT}:role/{name}-kms-provider",
        "fakeProfileName": f"{infra}-worker",
        "fakeReleaseImage": "quay.io/openshift-release-dev/ocp-release:4.22.3-multi",
        "fakeCPOImage": "quay.io/hypershift/control-plane-operator:4.22",
    }
    for role in ("Ingress", "ImageRegistry", "Storage", "Network", "KubeCloudController"):
        values[f"fake{role}ARN"] = f"arn:aws:iam::{ACCOUNT}:role/{name}-{role.lower()}"
    for role in ("NodePoolManagement", "ControlPlaneOperator"):
        values[f"fake{role}ARN"] = f"arn:aws:iam::{ACCOUNT}:role/{name}-{role.lower()}"
    text = yaml.safe_dump_all(template)
    for fake in sorted(values, key=len, reverse=True):
        text = text.replace(fake, values[fake])
    docs = [d for d in yaml.safe_load_all(text) if d]
    pool = next(d for d in docs if d["kind"] == "NodePool")
    docs.remove(pool)
    for zone in ZONES:
        p = copy.deepcopy(pool)
        p["metadata"]["name"] = f"{name}-{region}{zone}"
        p["spec"]["platform"]["aws"]["subnet"]["id"] = f"subnet-{i:015x}{ord(zone):02x}"
        docs.append(p)
    return docs


def write_fleet(n: int, folder: Path) -> list[Path]:
    """N clusters, one file each in ``folder`` (c000.yaml, …): what an import reads."""
    template = [d for d in yaml.safe_load_all(FIXTURE.read_text(encoding="utf-8")) if d]
    paths = []
    for i in range(n):
        path = folder / f"c{i:03d}.yaml"
        path.write_text(yaml.safe_dump_all(_cluster(i, template)), encoding="utf-8")
        paths.append(path)
    return paths


def _in_process(paths: list[Path]) -> dict[str, Any]:
    cpu, wall = time.process_time(), time.perf_counter()
    objects = []
    for path in paths:
        objects += read_documents(path.read_text(encoding="utf-8"), path.name)
    adoption = adopt(objects, ImportOptions(stack="bench-fleet", project_dir=PROJECT))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert not adoption.refused, [d.describe() for d in adoption.fidelity.differences][:5]
    return {
        "objects": len(objects),
        "clusters": len(adoption.clusters),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
    }


def _reap_orphans() -> None:
    """Make this process the reaper of its descendants' orphans (Linux), so that their CPU time counts in its
    children's: the fork server ``fleet check`` starts outlives it for a moment and would otherwise be reaped
    by init, with the CPU time of every stack forked from it."""
    if sys.platform == "linux":
        import ctypes

        PR_SET_CHILD_SUBREAPER = 36
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _wait_orphans() -> None:
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def _command(paths: list[Path], stacks: Path, per_cluster: bool) -> dict[str, Any]:
    stack = "{cluster}" if per_cluster else "bench-fleet"
    args = [sys.executable, "-m", "nodefleet", "import", "--stack", stack, "--stacks-dir", str(stacks)]
    args += ["--management-cluster", MANAGEMENT_CLUSTER]
    for path in paths:
        args += ["--from-file", str(path)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    result = subprocess.run(args, cwd=PROJECT, capture_output=True, text=True, timeout=1800)
    _wait_orphans()
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 1):
        raise SystemExit(f"import failed ({result.returncode}):\n{result.stderr[-2000:]}")
    registry = stacks / "nodefleet-fleet.yaml"
    entries = yaml.safe_load(registry.read_text(encoding="utf-8"))["managementClusters"]
    if MANAGEMENT_CLUSTER not in [e["name"] for e in entries]:
        raise SystemExit(f"import wrote no registry entry for {MANAGEMENT_CLUSTER}")
    return {
        "exit": result.returncode,
        "stacks": len(list(stacks.glob("Pulumi.*.yaml"))),
        "wall_s": round(wall, 2),
        "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
        "check": next(
            (
                line
                for line in result.stdout.splitlines()
                if line.startswith("nodefleet check") or " stacks in " in line
            ),
            "",
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--per-cluster",
        action="store_true",
        help="one stack per cluster (--stack {cluster}), checked by fleet check",
    )
    parser.add_argument(
        "--beside",
        type=Path,
        nargs="+",
        default=[],
        help="stack files copied into the stacks folder first: the import lands beside a fleet's other stacks",
    )
    args = parser.parse_args()
    _reap_orphans()
    rows = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="nodefleet-bench-adopt-") as tmp:
            folder = Path(tmp)
            (folder / "stacks").mkdir()
            for other in args.beside:
                shutil.copy(other, folder / "stacks")
            paths = write_fleet(n, folder)
            row = {"clusters": n, "nodePools": 3 * n, "in_process": _in_process(paths)}
            row["command"] = _command(paths, folder / "stacks", args.per_cluster)
            rows.append(row)
    load = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"load1": round(load, 2), "runs": rows}, indent=2))
        return
    print(f"import of hosted clusters from files (1-minute load {load:.1f}, {os.cpu_count()} CPUs)")
    for row in rows:
        ip, cmd = row["in_process"], row["command"]
        print(
            f"  {row['clusters']:>4} clusters, {row['nodePools']} NodePools, {ip['objects']} objects: import "
            f"{ip['wall_s']:.2f} s wall / {ip['cpu_s']:.2f} s CPU; `python -m nodefleet import` with its check: "
            f"{cmd['wall_s']:.2f} s wall / {cmd['cpu_s']:.2f} s CPU, exit {cmd['exit']}, {cmd['stacks']} stack "
            f"files in the folder, registry entry {MANAGEMENT_CLUSTER} written"
        )
        print(f"       {cmd['check']}")


if __name__ == "__main__":
    main()
