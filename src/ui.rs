//! The web view at `/ui`: static assets compiled into the binary (`ui/` in
//! the repository: plain HTML, CSS and an ES module, nothing fetched at run
//! time). They hold no data: the page asks the typed API (`/v1/…`) for
//! everything, with the bearer token the person signs in with, so `/ui`
//! itself needs no token (see `http::auth`).

use actix_web::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, ContentType};
use actix_web::{HttpResponse, web};

use crate::service::Service;

const INDEX_HTML: &str = include_str!("../ui/index.html");

/// Every asset but the page: its path under `/ui/`, its type, its content.
/// The libraries come from `ui/node_modules` (see `build.rs`).
const ASSETS: [(&str, &str, &str); 20] = [
    ("app.js", JS, include_str!("../ui/app.js")),
    ("api.js", JS, include_str!("../ui/api.js")),
    ("sentence.js", JS, include_str!("../ui/sentence.js")),
    ("timeline.js", JS, include_str!("../ui/timeline.js")),
    ("memory.js", JS, include_str!("../ui/memory.js")),
    ("provenance.js", JS, include_str!("../ui/provenance.js")),
    ("graph.js", JS, include_str!("../ui/graph.js")),
    ("graph-draw.js", JS, include_str!("../ui/graph-draw.js")),
    ("marks.js", JS, include_str!("../ui/marks.js")),
    ("context.js", JS, include_str!("../ui/context.js")),
    ("phases.js", JS, include_str!("../ui/phases.js")),
    ("contradictions.js", JS, include_str!("../ui/contradictions.js")),
    ("handoffs.js", JS, include_str!("../ui/handoffs.js")),
    ("style.css", CSS, include_str!("../ui/style.css")),
    ("vendor/cytoscape.mjs", JS, include_str!("../ui/node_modules/cytoscape/dist/cytoscape.esm.min.mjs")),
    // fcose, the graph's layout: UMD builds, loaded as classic scripts in
    // this order (each sets a global the next one reads).
    ("vendor/layout-base.js", JS, include_str!("../ui/node_modules/layout-base/layout-base.js")),
    ("vendor/cose-base.js", JS, include_str!("../ui/node_modules/cose-base/cose-base.js")),
    ("vendor/cytoscape-fcose.js", JS, include_str!("../ui/node_modules/cytoscape-fcose/cytoscape-fcose.js")),
    ("vendor/uplot.mjs", JS, include_str!("../ui/node_modules/uplot/dist/uPlot.esm.js")),
    ("vendor/uplot.css", CSS, include_str!("../ui/node_modules/uplot/dist/uPlot.min.css")),
];
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// Scripts, styles and requests only from this server; nothing inline but
/// the page's own attributes.
const POLICY: &str = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// Whether a path is one of the view's assets, which need no token.
pub fn is_ui_path(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

/// Registers `/ui` and its assets.
pub fn routes(config: &mut web::ServiceConfig) {
    config.route("/ui", web::get().to(index)).route("/ui/", web::get().to(index));
    for (path, content_type, body) in ASSETS {
        config.route(&format!("/ui/{path}"), web::get().to(move || asset(content_type, body)));
    }
}

/// The page, told the swarm's name and whether the API asks for a token.
async fn index(service: web::Data<Service>) -> HttpResponse {
    let auth = if service.tokens.is_empty() { "open" } else { "token" };
    // The first swarm is shown first; the page offers the others (`GET
    // /v1/swarms`, which lists those the visitor's token opens).
    let first = service.swarms.names().into_iter().next().unwrap_or_default();
    let page = INDEX_HTML.replace("{{swarm}}", &escape_attribute(&first)).replace("{{auth}}", auth);
    HttpResponse::Ok()
        .content_type(ContentType::html())
        .insert_header((CONTENT_SECURITY_POLICY, POLICY))
        .insert_header((CACHE_CONTROL, "no-cache"))
        .body(page)
}

async fn asset(content_type: &'static str, body: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((CONTENT_SECURITY_POLICY, POLICY))
        .insert_header((CACHE_CONTROL, "no-cache"))
        .body(body)
}

/// A swarm name in an HTML attribute (names are validated, but the page
/// does not rely on it).
fn escape_attribute(text: &str) -> String {
    text.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::{ASSETS, INDEX_HTML, escape_attribute, is_ui_path};

    /// Every module the page's scripts import, and every file the page
    /// links, is served: a new view file missing from `ASSETS` fails here,
    /// not in a browser.
    #[test]
    fn every_asset_the_page_names_is_served() {
        let served = |path: &str| ASSETS.iter().any(|(asset, _, _)| *asset == path);
        for (path, _, body) in ASSETS.iter().filter(|(path, _, _)| path.ends_with(".js")) {
            for quoted in body.split(['"', '\'']).filter(|text| text.starts_with("./")) {
                assert!(served(&quoted[2..]), "{path} imports {quoted}, which is not served");
            }
        }
        for linked in INDEX_HTML.split('"').filter_map(|text| text.strip_prefix("/ui/")) {
            assert!(served(linked), "index.html links /ui/{linked}, which is not served");
        }
    }

    #[test]
    fn only_the_view_s_paths_are_its_own() {
        assert!(is_ui_path("/ui") && is_ui_path("/ui/app.js"));
        assert!(!is_ui_path("/uix") && !is_ui_path("/v1/ui"));
        assert_eq!(escape_attribute(r#"a"<b>&"#), "a&quot;&lt;b&gt;&amp;");
    }
}
