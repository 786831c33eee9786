//! The web view at `/ui`: static assets compiled into the binary (`ui/` in
//! the repository: plain HTML, CSS and an ES module, nothing fetched at run
//! time). They hold no data: the page asks the typed API (`/v1/…`) for
//! everything, with the bearer token the person signs in with, so `/ui`
//! itself needs no token (see `http::auth`).

use actix_web::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, ContentType};
use actix_web::{HttpResponse, web};

use crate::service::Service;

const INDEX_HTML: &str = include_str!("../ui/index.html");
const APP_JS: &str = include_str!("../ui/app.js");
const STYLE_CSS: &str = include_str!("../ui/style.css");

/// Scripts, styles and requests only from this server; nothing inline but
/// the page's own attributes.
const POLICY: &str =
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// Whether a path is one of the view's assets, which need no token.
pub fn is_ui_path(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

/// Registers `/ui` and its assets.
pub fn routes(config: &mut web::ServiceConfig) {
    config
        .route("/ui", web::get().to(index))
        .route("/ui/", web::get().to(index))
        .route("/ui/app.js", web::get().to(|| asset("text/javascript; charset=utf-8", APP_JS)))
        .route("/ui/style.css", web::get().to(|| asset("text/css; charset=utf-8", STYLE_CSS)));
}

/// The page, told the swarm's name and whether the API asks for a token.
async fn index(service: web::Data<Service>) -> HttpResponse {
    let auth = if service.config.api_tokens().is_empty() { "open" } else { "token" };
    let page = INDEX_HTML.replace("{{swarm}}", &escape_attribute(&service.config.swarm.name)).replace("{{auth}}", auth);
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
    use super::{escape_attribute, is_ui_path};

    #[test]
    fn only_the_view_s_paths_are_its_own() {
        assert!(is_ui_path("/ui") && is_ui_path("/ui/app.js"));
        assert!(!is_ui_path("/uix") && !is_ui_path("/v1/ui"));
        assert_eq!(escape_attribute(r#"a"<b>&"#), "a&quot;&lt;b&gt;&amp;");
    }
}
