//! Replays every saved fuzz input under fuzz/regressions/<target>/ through the
//! target's property, so a crash once found and fixed stays fixed.

use agentconform::suites::fuzz_targets as targets;
use libtest_mimic::{Arguments, Trial};
use std::path::Path;

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions");
    let mut trials = Vec::new();
    for (name, check) in targets() {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort();
        let count = files.len();
        let folder = dir.display().to_string();
        trials.push(Trial::test(
            format!("fuzz_regressions::{name}::has_inputs"),
            move || {
                if count == 0 {
                    return Err(format!("{folder} holds no input").into());
                }
                Ok(())
            },
        ));
        for path in files {
            let label = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            trials.push(Trial::test(
                format!("fuzz_regressions::{name}::{label}"),
                move || {
                    let data = std::fs::read(&path).map_err(|e| e.to_string())?;
                    check(&data).map_err(Into::into)
                },
            ));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
