"""Compile and run the Java conformance programs (``tests/conformance/java/*.java``).

The programs are compiled once per content hash (sources + classpath jar names + ``javac`` version)
into ``<cache>/conformance-classes/<hash>/`` — never into the repository — and run with the 4.9.8
client classpath. Each program prints one JSON document as the last line of stdout and logs to
stderr (see ``java/Common.java``).

JDK 17 notes: the 4.9.x *clients* run without extra flags; the *servers* need the module openings in
``SERVER_JDK17_FLAGS`` (their mmap cleanup reflects into ``java.nio`` / ``jdk.internal.ref``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conformance import maven

JAVA_SOURCES = Path(__file__).with_name("java")

# The 4.9.x broker on JDK 17 (checked here): it starts and serves without these, but its shutdown hook
# unmaps the commitlog with reflection (DirectByteBuffer.attachment(), then jdk.internal.ref.Cleaner.clean())
# and dies with InaccessibleObjectException — an unclean store shutdown — unless both are opened.
SERVER_JDK17_FLAGS = [
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
]
# The 5.x servers also reach into sun.nio.ch (their mmap and transient store pool code).
SERVER5_JDK17_FLAGS = [*SERVER_JDK17_FLAGS, "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED"]

# Short-lived client programs: small heap, quick start.
CLIENT_JVM_FLAGS = [
    "-Xms64m",
    "-Xmx384m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Dfile.encoding=UTF-8",
]

# slf4j users (Netty, the tools module) would otherwise log DEBUG to stdout through logback's default.
QUIET_LOGBACK = """<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR"/></root>
</configuration>
"""


def java_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise maven.PrerequisiteMissing("`java` is not on PATH (JDK 17 needed)")
    return found


def javac_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").exists():
        return str(Path(home) / "bin" / "javac")
    found = shutil.which("javac")
    if found is None:
        raise maven.PrerequisiteMissing("`javac` is not on PATH (a JDK, not a JRE, is needed)")
    return found


class JavaProgramError(AssertionError):
    """A conformance program failed or printed no JSON; carries its output for the test report."""


@dataclass(frozen=True, slots=True)
class JavaResult:
    main_class: str
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed: float

    def json(self) -> Any:
        """The JSON document on the last stdout line; raises with the program's output otherwise."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        if self.returncode != 0 or not lines:
            raise JavaProgramError(self.describe("failed"))
        try:
            return json.loads(lines[-1])
        except ValueError as exc:
            raise JavaProgramError(self.describe(f"printed no JSON ({exc})")) from exc

    def describe(self, what: str, tail: int = 60) -> str:
        err = "\n".join(self.stderr.splitlines()[-tail:])
        out = "\n".join(self.stdout.splitlines()[-10:])[-4000:]
        return (
            f"{self.main_class} {' '.join(self.args)} {what}: exit {self.returncode} "
            f"after {self.elapsed:.1f} s\n"
            f"--- stderr (tail) ---\n{err}\n--- stdout (tail) ---\n{out}"
        )


class JavaPrograms:
    """Runs the conformance programs; ``compile()`` is cheap when the classes are already cached."""

    def __init__(self, client_lib: Path, log_dir: Path | None = None, sources: Path = JAVA_SOURCES) -> None:
        self.client_lib = client_lib
        self.log_dir = log_dir or maven.cache_root() / "client-logs"
        self.sources = sources  # a folder of *.java compiled together (bench/ has its own)
        self.classes: Path | None = None

    def _digest(self) -> str:
        h = hashlib.sha256()
        for src in sorted(self.sources.glob("*.java")):
            h.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
        for jar in sorted(self.client_lib.glob("*.jar")):
            h.update(jar.name.encode() + b"\0")
        h.update(QUIET_LOGBACK.encode())
        version = subprocess.run([javac_executable(), "-version"], capture_output=True, text=True)
        h.update((version.stdout + version.stderr).encode())
        return h.hexdigest()[:16]

    def compile(self) -> Path:
        digest = self._digest()
        target = maven.cache_root() / "conformance-classes" / digest
        if not (target / ".ok").exists():
            with maven.file_lock(maven.cache_root() / ".javac.lock"):
                if not (target / ".ok").exists():
                    partial = target.with_name(digest + ".partial")
                    shutil.rmtree(partial, ignore_errors=True)
                    partial.mkdir(parents=True)
                    sources = [str(p) for p in sorted(self.sources.glob("*.java"))]
                    cmd = [
                        javac_executable(),
                        "-encoding",
                        "UTF-8",
                        "-nowarn",
                        "-d",
                        str(partial),
                        "-cp",
                        maven.classpath(self.client_lib),
                        *sources,
                    ]
                    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
                    if proc.returncode != 0:
                        shutil.rmtree(partial, ignore_errors=True)
                        raise JavaProgramError(f"javac failed:\n{proc.stdout}\n{proc.stderr}")
                    (partial / "logback-quiet.xml").write_text(QUIET_LOGBACK)
                    (partial / ".ok").write_text("ok\n")
                    shutil.rmtree(target, ignore_errors=True)
                    partial.rename(target)
        self.classes = target
        return target

    def command(
        self,
        main_class: str,
        args: list[str],
        jvm_props: dict[str, str] | None = None,
        jvm_flags: list[str] | None = None,
    ) -> list[str]:
        """The ``java`` argv; ``jvm_flags`` replaces ``CLIENT_JVM_FLAGS`` (load generators want C2)."""
        if self.classes is None:
            self.compile()
        assert self.classes is not None
        self.log_dir.mkdir(parents=True, exist_ok=True)
        props = {
            "logback.configurationFile": str(self.classes / "logback-quiet.xml"),
            "rocketmq.client.logRoot": str(self.log_dir),
            "rocketmq.client.logLevel": "WARN",
        }
        props.update(jvm_props or {})
        return [
            java_executable(),
            *(CLIENT_JVM_FLAGS if jvm_flags is None else jvm_flags),
            *(f"-D{k}={v}" for k, v in props.items()),
            "-cp",
            maven.classpath(self.client_lib, self.classes),
            main_class,
            *args,
        ]

    def run(
        self,
        main_class: str,
        args: list[str] | tuple[str, ...] = (),
        timeout: float = 120,
        jvm_props: dict[str, str] | None = None,
    ) -> JavaResult:
        """Run one program to completion (killed after ``timeout`` seconds) and return its output."""
        args = [str(a) for a in args]
        cmd = self.command(main_class, args, jvm_props)
        begin = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            result = JavaResult(
                main_class,
                args,
                -9,
                out.decode("utf-8", "replace"),
                err.decode("utf-8", "replace"),
                time.monotonic() - begin,
            )
            raise JavaProgramError(result.describe(f"timed out after {timeout:.0f} s")) from None
        return JavaResult(
            main_class,
            args,
            proc.returncode,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
            time.monotonic() - begin,
        )
