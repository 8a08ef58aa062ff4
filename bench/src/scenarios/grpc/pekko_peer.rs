//! The Pekko gRPC peer (`bench/peers/pekko-grpc`): grpc_bench's Greeter on
//! Apache Pekko gRPC's Java API, the seed's own system. Built with Maven
//! before each run (pekko-grpc's Maven plugin generates its Java classes
//! from `crates/volley-grpc/proto/helloworld.proto`, so the proto is
//! shared with every other target) and run with `java -jar`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::which;
use crate::progress::Progress;

/// `java` and the arguments that start the harness, built if need be.
pub(super) fn greeter(
    root: &Path,
    progress: &Progress,
    no_build: bool,
) -> Result<(PathBuf, Vec<String>), String> {
    let dir = root.join("bench/peers/pekko-grpc");
    let jar = dir.join("target/pekko-grpc-bench.jar");
    let java = which("java").ok_or("no Java to run it with")?;
    let run = |jar: &Path| (java.clone(), vec!["-jar".into(), jar.display().to_string()]);
    if no_build {
        return if jar.is_file() {
            Ok(run(&jar))
        } else {
            Err("not built (--no-build)".into())
        };
    }
    let mvn = which("mvn").ok_or("no Maven to build it with")?;
    progress.note("building bench/peers/pekko-grpc (mvn package)");
    let status = progress.suspend(|| {
        Command::new(mvn)
            .current_dir(&dir)
            .args(["-q", "-B", "package", "-DskipTests"])
            .status()
    });
    match status {
        Ok(s) if s.success() && jar.is_file() => Ok(run(&jar)),
        Ok(s) => Err(format!("mvn package in {} failed ({s})", dir.display())),
        Err(e) => Err(format!("cannot run mvn: {e}")),
    }
}
