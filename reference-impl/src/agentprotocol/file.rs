//! The file binding: messages are files `{from}-{to}-{timestamp}-{id}.json` in one
//! folder (agent ids in their file-name-safe form, timestamps without ':'). Writers
//! write a dot-file and rename it, so a reader never sees half a message; a reader
//! takes (deletes) the files addressed to it.

use super::agent::ApAgent;
use super::message::fs_id;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// `YYYYMMDDTHHMMSSZ`, a timestamp fit for file names.
pub fn file_timestamp() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// The file name for a message.
pub fn file_name(msg: &Value) -> String {
    file_name_for(
        msg["from"]["agentId"].as_str().unwrap_or("unknown"),
        msg["to"]["agentId"].as_str().unwrap_or(""),
        msg["id"].as_str().unwrap_or("noid"),
    )
}

/// The file name for a message from `from` to `to` (empty: a broadcast) with `id`.
pub fn file_name_for(from: &str, to: &str, id: &str) -> String {
    let from = fs_id(from);
    let to = if to.is_empty() {
        "broadcast".into()
    } else {
        fs_id(to)
    };
    let id = id.replace(['/', '\\'], "_");
    format!("{from}-{to}-{}-{id}.json", file_timestamp())
}

/// Writes `bytes` as `dir/name` atomically (a dot-file, then a rename).
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, dir.join(name))
}

/// Takes the files in `dir` addressed to `me` (and broadcasts, with `broadcast`) and
/// not sent by `me`, at most `max` of them, oldest name first. Files larger than `cap`
/// are removed.
pub fn take_addressed(
    dir: &Path,
    me: &str,
    broadcast: bool,
    max: usize,
    cap: u64,
) -> std::io::Result<Vec<(PathBuf, Vec<u8>)>> {
    let me = fs_id(me);
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.ends_with(".json")
                && !n.starts_with('.')
                && !n.starts_with(&format!("{me}-"))
                && (n.contains(&format!("-{me}-")) || (broadcast && n.contains("-broadcast-")))
        })
        .collect();
    names.sort();
    let mut out = Vec::new();
    for p in names.into_iter().take(max) {
        let too_big = std::fs::metadata(&p).map(|m| m.len() > cap).unwrap_or(true);
        let bytes = if too_big {
            None
        } else {
            std::fs::read(&p).ok()
        };
        // Taken: removed whether or not it could be read, so it is never read twice.
        let _ = std::fs::remove_file(&p);
        if let Some(b) = bytes {
            out.push((p, b));
        }
    }
    Ok(out)
}

/// Serves `agent` on the folder `dir`, polling every `poll`; ends when `stop` fires.
pub async fn serve_folder(
    agent: Arc<ApAgent>,
    dir: PathBuf,
    poll: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let me = agent.agent_id();
    let cap = agent.config().max_message_bytes as u64;
    loop {
        if *stop.borrow() {
            return;
        }
        if let Ok(files) = take_addressed(&dir, &me, true, 64, cap) {
            for (_, bytes) in files {
                let (a, d) = (agent.clone(), dir.clone());
                tokio::spawn(async move {
                    if let Some(reply) = a.handle_reply(&bytes).await {
                        // Named after the agent and the addressee, whatever the reply
                        // holds (a fault may send something that is not a message).
                        let v = serde_json::from_slice::<Value>(&reply.body).unwrap_or_default();
                        let id = v["id"]
                            .as_str()
                            .map(String::from)
                            .unwrap_or_else(crate::wire::new_id);
                        let name = file_name_for(&a.agent_id(), &reply.to, &id);
                        let _ = write_atomic(&d, &name, &reply.body);
                    }
                });
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = stop.changed() => {}
        }
    }
}
