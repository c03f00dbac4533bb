"""Fetch (once) and cache the Java side that `footprint-audit stream` needs on Flink and Kafka.

What it lays down, under ``$FOOTPRINT_AUDIT_JARS`` (default
``~/.cache/footprint-audit/jars``)::

    beam-<BEAM>-flink-<FLINK>/
        lib/*.jar                 full runtime classpath, resolved by Maven:
                                  Beam's Flink runner + job service, the Java SDK
                                  harness (for the EMBEDDED Java environment),
                                  the Java expansion service and KafkaIO with
                                  kafka-clients
        job-server.jar            tiny launcher jar: Main-Class
                                  FlinkJobServerDriver, Class-Path lib/*.jar,
                                  Add-Opens for Java 17 -> usable as
                                  --flink_job_server_jar
        expansion-service.jar     tiny launcher jar: Main-Class ExpansionService,
                                  same Class-Path -> JavaJarExpansionService
    kafka-<KAFKA>/
        lib/*.jar                 kafka_2.13 + kafka-tools runtime classpath:
                                  `java -cp 'lib/*' kafka.Kafka server.properties`
    versions.json                 what was fetched, with paths

Why launcher jars instead of Beam's shaded job-server jar: the Maven Central
that this project can reach does not serve
``org.apache.beam:beam-runners-flink-1.*-job-server`` nor a current
``beam-sdks-java-io-expansion-service`` (see tools/README.md); it does serve
the unshaded modules, so Maven resolves them and a manifest-only jar ties
them together.  ``java -jar job-server.jar`` behaves like the shaded jar.

Idempotent: a finished directory carries a ``.complete`` stamp holding the
spec it was built from; a second run with the same spec does no network I/O.

Usage::

    python tools/fetch_jars.py            # fetch if needed, print what is there
    python tools/fetch_jars.py --json     # same, machine-readable on stdout
    python tools/fetch_jars.py --check    # exit 1 if not fetched yet; no network

Importable (from the repository root): ``tools.jars.ensure_jars()`` returns the same dict as ``--json``;
``kafka_expansion_service(jars)`` is the expansion service `ReadFromKafka` uses.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from footprint_audit.pipelines.flink.cached_jars import BEAM_JAVA_VERSION, FLINK_VERSION, default_cache_dir, runner_of

# ---------------------------------------------------------------------------
# Versions.  The Maven Central reachable here serves no Beam job-server jar at
# all and only some versions of Beam's Java modules:
#   beam-runners-flink-1.19 ........ 2.62.0, 2.70.0 (no 1.17/1.18/1.20/2.x runner)
#   beam-runners-java-job-service .. <=2.57.0, 2.62.0, 2.65.0
#   beam-sdks-java-harness / -expansion-service .. up to 2.73.0
#   beam-sdks-java-io-kafka ........ up to 2.76.0
# So: Beam 2.70.0 (newest Flink runner served) with the job-service module at
# 2.65.0 (the newest served; both use beam-vendor-grpc-1_69_0).  KafkaIO 2.70
# knows every field Python 2.77's ReadFromKafka sends (2.62 does not).  The
# Python SDK (2.77.0) talks to this Java side over the portable Job/Fn API;
# tests/integration proves that combination works.
BEAM_JOB_SERVICE_VERSION = "2.65.0"
KAFKA_CLIENTS_VERSION = "3.9.1"  # what KafkaIO (Java) uses inside Flink
KAFKA_BROKER_VERSION = "4.4.0"   # the KRaft broker used by the tests
SLF4J_VERSION = "1.7.36"      # the Kafka broker's reload4j binding (slf4j 1.7 API)
SLF4J2_VERSION = "2.0.16"    # Beam 2.70 and Flink pull slf4j-api 2.0.16: a 1.7 binding is ignored, so no log
JAMM_VERSION = "0.4.0"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

FLINK_JOB_SERVER_MAIN = "org.apache.beam.runners.flink.FlinkJobServerDriver"
EXPANSION_SERVICE_MAIN = "org.apache.beam.sdk.expansion.service.ExpansionService"

# What Flink itself puts in env.java.opts.all for Java 17 (flink-conf.yaml of
# the 1.19 distribution), as manifest attributes; `java -jar` honours them.
ADD_OPENS = [
    "java.base/java.lang", "java.base/java.net", "java.base/java.io",
    "java.base/java.nio", "java.base/sun.nio.ch", "java.base/java.lang.reflect",
    "java.base/java.text", "java.base/java.time", "java.base/java.util",
    "java.base/java.util.concurrent", "java.base/java.util.concurrent.atomic",
    "java.base/java.util.concurrent.locks",
]
ADD_EXPORTS = [
    "java.base/sun.net.util", "java.rmi/sun.rmi.registry",
    "java.security.jgss/sun.security.krb5",
]
# The same flags for a plain `java -cp` command line.
JAVA17_FLAGS = ([f"--add-opens={p}=ALL-UNNAMED" for p in ADD_OPENS]
                + [f"--add-exports={p}=ALL-UNNAMED" for p in ADD_EXPORTS])


def _dep(group, artifact, version, exclusions=()):
    excl = "".join(
        f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
        for g, a in exclusions)
    if excl:
        excl = f"<exclusions>{excl}</exclusions>"
    return (f"<dependency><groupId>{group}</groupId><artifactId>{artifact}"
            f"</artifactId><version>{version}</version>{excl}</dependency>")


def _pom(name, deps):
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by footprint-audit tools/fetch_jars.py; only used to resolve a classpath -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>footprint-audit.cache</groupId>
  <artifactId>{name}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    {chr(10).join('    ' + d for d in deps).strip()}
  </dependencies>
</project>
"""


def beam_spec():
    b = BEAM_JAVA_VERSION
    return {
        "name": f"beam-{b}-flink-{FLINK_VERSION}",
        "deps": [
            _dep("org.apache.beam", f"beam-runners-flink-{FLINK_VERSION}", b),
            _dep("org.apache.beam", "beam-runners-java-job-service",
                 BEAM_JOB_SERVICE_VERSION),
            _dep("org.apache.beam", "beam-sdks-java-harness", b),
            _dep("org.apache.beam", "beam-sdks-java-expansion-service", b),
            # io.confluent artifacts are not on Maven Central (Confluent's own
            # repository is not reachable here); only Schema Registry needs them.
            _dep("org.apache.beam", "beam-sdks-java-io-kafka", b,
                 exclusions=[("io.confluent", "*")]),
            _dep("org.apache.kafka", "kafka-clients", KAFKA_CLIENTS_VERSION),
            # The Java SDK harness (EMBEDDED environment) needs jamm, which
            # Beam shades into its jars but does not declare in the pom:
            # NoClassDefFoundError: org/github/jamm/MemoryMeter otherwise.
            _dep("com.github.jbellis", "jamm", JAMM_VERSION),
            _dep("org.slf4j", "slf4j-simple", SLF4J2_VERSION),
        ],
    }


def kafka_spec():
    k = KAFKA_BROKER_VERSION
    return {
        "name": f"kafka-{k}",
        "deps": [
            _dep("org.apache.kafka", "kafka_2.13", k),
            _dep("org.apache.kafka", "kafka-tools", k),
            _dep("org.slf4j", "slf4j-reload4j", SLF4J_VERSION),
        ],
    }


class FetchError(RuntimeError):
    pass


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        hint = {
            "java": "install a JDK 17 (Debian: apt-get install -y openjdk-17-jdk-headless)",
            "mvn": "install Maven (Debian: apt-get install -y maven)",
        }[tool]
        raise FetchError(f"`{tool}` not found on PATH: {hint}")
    return path


def _spec_digest(spec) -> str:
    blob = json.dumps([spec["name"], spec["deps"], DEPENDENCY_PLUGIN],
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _manifest_jar(path: Path, main_class: str, lib: Path):
    """A jar holding only a manifest: Main-Class + relative Class-Path."""
    rel = os.path.relpath(lib, path.parent)
    entries = [f"{rel}/{j.name}" for j in sorted(lib.glob("*.jar"))]
    if not entries:
        raise FetchError(f"no jars in {lib}")

    def attr(name, values):
        # Manifest lines are at most 72 bytes; continuation lines start
        # with one space.
        text = f"{name}: " + " ".join(values)
        raw = text.encode("utf-8")
        out = [raw[:72]]
        raw = raw[72:]
        while raw:
            out.append(b" " + raw[:71])
            raw = raw[71:]
        return b"\r\n".join(out) + b"\r\n"

    manifest = (b"Manifest-Version: 1.0\r\n"
                + b"Created-By: footprint-audit tools/fetch_jars.py\r\n"
                + attr("Main-Class", [main_class])
                + attr("Add-Opens", ADD_OPENS)
                + attr("Add-Exports", ADD_EXPORTS)
                + attr("Class-Path", entries)
                + b"\r\n")
    tmp = path.with_suffix(".jar.tmp")
    with zipfile.ZipFile(tmp, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", manifest)
    os.replace(tmp, path)


def _resolve(spec, cache: Path, log) -> Path:
    target = cache / spec["name"]
    stamp = target / ".complete"
    digest = _spec_digest(spec)
    if stamp.exists() and stamp.read_text().strip() == digest:
        log(f"cached   {target}")
        return target
    mvn = _need("mvn")
    _need("java")
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=spec["name"] + ".", dir=cache))
    try:
        (work / "pom.xml").write_text(_pom(spec["name"], spec["deps"]))
        cmd = [mvn, "-B", "-q", "-f", str(work / "pom.xml"),
               f"{DEPENDENCY_PLUGIN}:copy-dependencies",
               "-DincludeScope=runtime",
               f"-DoutputDirectory={work / 'lib'}"]
        if os.environ.get("FOOTPRINT_AUDIT_M2"):
            cmd.append(f"-Dmaven.repo.local={os.environ['FOOTPRINT_AUDIT_M2']}")
        log(f"fetching {spec['name']} with Maven ...")
        t0 = time.monotonic()
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            tail = "\n".join(proc.stdout.splitlines()[-25:])
            raise FetchError(
                f"Maven could not resolve {spec['name']} "
                f"(exit {proc.returncode}):\n{tail}")
        jars = sorted((work / "lib").glob("*.jar"))
        size = sum(j.stat().st_size for j in jars)
        log(f"fetched  {spec['name']}: {len(jars)} jars, "
            f"{size / 2**20:.0f} MiB in {time.monotonic() - t0:.0f}s")
        if target.exists():
            shutil.rmtree(target)
        os.replace(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target


def _describe(cache: Path) -> dict:
    beam_dir = cache / beam_spec()["name"]
    kafka_dir = cache / kafka_spec()["name"]
    return {
        "cache_dir": str(cache),
        "beam_java_version": BEAM_JAVA_VERSION,
        "beam_job_service_version": BEAM_JOB_SERVICE_VERSION,
        "flink_version": FLINK_VERSION,
        "kafka_clients_version": KAFKA_CLIENTS_VERSION,
        "kafka_broker_version": KAFKA_BROKER_VERSION,
        "flink_job_server_jar": str(beam_dir / "job-server.jar"),
        "expansion_service_jar": str(beam_dir / "expansion-service.jar"),
        "beam_lib": str(beam_dir / "lib"),
        "kafka_lib": str(kafka_dir / "lib"),
        "kafka_classpath": str(kafka_dir / "lib") + os.sep + "*",
        "java17_flags": JAVA17_FLAGS,
    }


def is_fetched(cache: Path | None = None) -> bool:
    cache = Path(cache) if cache else default_cache_dir()
    for spec in (beam_spec(), kafka_spec()):
        stamp = cache / spec["name"] / ".complete"
        if not (stamp.exists() and stamp.read_text().strip() == _spec_digest(spec)):
            return False
    d = _describe(cache)
    return (Path(d["flink_job_server_jar"]).exists()
            and Path(d["expansion_service_jar"]).exists())


def ensure_jars(cache: Path | str | None = None, log=None) -> dict:
    """Fetch whatever is missing; return paths (see module doc)."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    cache = Path(cache).expanduser() if cache else default_cache_dir()
    for spec, post in ((beam_spec(), _finish_beam), (kafka_spec(), None)):
        stamp = Path(cache) / spec["name"] / ".complete"
        digest = _spec_digest(spec)
        was_done = stamp.exists() and stamp.read_text().strip() == digest
        target = _resolve(spec, cache, log)
        if not was_done:
            if post:
                post(target)
            stamp.write_text(digest + "\n")
    info = _describe(cache)
    (cache / "versions.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def _finish_beam(target: Path):
    _manifest_jar(target / "job-server.jar", FLINK_JOB_SERVER_MAIN,
                  target / "lib")
    _manifest_jar(target / "expansion-service.jar", EXPANSION_SERVICE_MAIN,
                  target / "lib")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache-dir", help="default: $FOOTPRINT_AUDIT_JARS or "
                    "~/.cache/footprint-audit/jars")
    ap.add_argument("--json", action="store_true",
                    help="print the paths as JSON on stdout")
    ap.add_argument("--check", action="store_true",
                    help="only report whether everything is cached (exit 1 if not)")
    args = ap.parse_args(argv)
    cache = Path(args.cache_dir).expanduser() if args.cache_dir else default_cache_dir()
    if args.check:
        ok = is_fetched(cache)
        print(f"{'complete' if ok else 'missing'}: {cache}")
        return 0 if ok else 1
    try:
        info = ensure_jars(cache)
    except FetchError as e:
        print(f"fetch_jars: ERROR: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        for k, v in info.items():
            if k != "java17_flags":
                print(f"{k:24} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


def kafka_expansion_service(jars: dict):
    """The expansion service for `ReadFromKafka`, from the cached launcher jar (no download).

    ``--defaultEnvironmentType=EMBEDDED`` runs the Java part (KafkaIO) inside the
    Flink job server's own JVM, whose classpath is the same lib/ directory; the
    launcher jar is tiny, so staging it (``--filesToStage``) is cheap.
    """
    from apache_beam.transforms.external import JavaJarExpansionService

    jar = jars["expansion_service_jar"]
    return JavaJarExpansionService(
        jar, extra_args=["{{PORT}}", "--defaultEnvironmentType=EMBEDDED", f"--filesToStage={jar}"]
    )


def with_flink_job_server(beam_args: list[str]) -> list[str]:
    """Beam's arguments with `--flink_job_server_jar` set to the cached jar when the runner is
    Flink and none was given (Maven Central serves no job-server jar; see tools/README.md)."""
    runner = runner_of(beam_args)
    if runner is None or not runner.lower().startswith("flink"):
        return beam_args
    if any(a.startswith("--flink_job_server_jar") for a in beam_args):
        return beam_args
    return [*beam_args, f"--flink_job_server_jar={ensure_jars()['flink_job_server_jar']}"]
