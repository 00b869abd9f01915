//! Tar shards as a user meets them, through the CLI as a process: `loaderbench shards`
//! converting a folder, runs over local and HTTP shards (served by a real nginx started
//! by the test), and each kind of bad input named in one line with its exit code.

mod common;

use common::nginx::{self, Nginx};
use common::process::running;

#[test]
fn nginx_serves_a_folder_and_leaves_no_process() {
    let root = tempfile::TempDir::new().unwrap();
    std::fs::write(root.path().join("a.tar"), b"shard bytes").unwrap();
    let Some(mut server) = Nginx::serve(root.path(), Some(1 << 20)) else {
        return;
    };
    let pid = server.pid();
    let response = nginx::get(&server.url("a.tar"));
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("shard bytes"), "{response}");
    let missing = nginx::get(&server.url("missing.tar"));
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
    server.stop();
    assert!(!running(pid), "nginx {pid} still runs after stop");
    drop(server);
}
