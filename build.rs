//! The web view's libraries (cytoscape and its fcose layout for the fact
//! graph, uPlot for the timeline's chart) come from the npm registry, pinned and hash-checked by
//! `ui/package-lock.json`, into `ui/node_modules`; `src/ui.rs` compiles them
//! into the binary. Without them the build stops here and says how to get
//! them, instead of an `include_str!` error that does not.

use std::path::Path;

/// The files `src/ui.rs` embeds from `ui/node_modules`.
const VENDORED: [&str; 6] = [
    "cytoscape/dist/cytoscape.esm.min.mjs",
    "layout-base/layout-base.js",
    "cose-base/cose-base.js",
    "cytoscape-fcose/cytoscape-fcose.js",
    "uplot/dist/uPlot.esm.js",
    "uplot/dist/uPlot.min.css",
];

fn main() {
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/node_modules");
    let missing: Vec<&str> = VENDORED.iter().copied().filter(|file| !modules.join(file).is_file()).collect();
    if !missing.is_empty() {
        panic!(
            "the web view's libraries are not installed (ui/node_modules/{} missing): run scripts/install-ui-deps.sh \
             (npm ci in ui/, from the npm registry), then build again",
            missing.join(", ui/node_modules/")
        );
    }
    for file in VENDORED {
        println!("cargo:rerun-if-changed=ui/node_modules/{file}");
    }
    println!("cargo:rerun-if-changed=ui/package-lock.json");
}
