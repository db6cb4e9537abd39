//! Takes from the vendored Swagger UI release (the `utoipa-swagger-ui-vendored` crate, no
//! network) only the files `/docs` loads, into `$OUT_DIR/swagger-ui/`. The three bundles the
//! page never asks for (the ES-module builds and the unbundled `swagger-ui.js`, 2.3 MB) stay
//! out of the package, and so does the standalone preset (252 KB, 75 KB zipped): it only adds
//! the top bar where a visitor types another document's URL, and the page shows this API's
//! own (`BaseLayout`), so its `<script>` line is taken out of `index.html`.

use std::io::Read;
use std::path::PathBuf;

/// The files of Swagger UI's `dist/` folder the page uses (its own HTML, styles, scripts, icons
/// and the OAuth redirect page).
const FILES: &[&str] = &[
    "index.html",
    "index.css",
    "swagger-ui.css",
    "swagger-ui-bundle.js",
    "favicon-16x16.png",
    "favicon-32x32.png",
    "oauth2-redirect.html",
    "oauth2-redirect.js",
];

/// Swagger UI's page without its line loading the standalone preset (an error when the
/// release's page has no such line: then this build step needs a look).
fn without_preset(page: &str) -> Result<String, String> {
    let kept: Vec<&str> = page
        .lines()
        .filter(|line| !line.contains("swagger-ui-standalone-preset.js"))
        .collect();
    if kept.len() + 1 != page.lines().count() {
        return Err(
            "the vendored index.html does not load the standalone preset on one line".into(),
        );
    }
    Ok(kept.join("\n") + "\n")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("swagger-ui");
    std::fs::create_dir_all(&out)?;
    let bytes = utoipa_swagger_ui_vendored::SWAGGER_UI_VENDORED;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))?;
    let mut found = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i)?;
        let name = entry.name()?.into_owned();
        // `swagger-ui-<version>/dist/<file>`, not the flavours' own dist folders.
        let mut parts = name.splitn(3, '/');
        let (Some(_), Some("dist"), Some(file)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if FILES.contains(&file) {
            let mut content = Vec::new();
            entry.read_to_end(&mut content)?;
            if file == "index.html" {
                content = without_preset(&String::from_utf8(content)?)?.into_bytes();
            }
            std::fs::write(out.join(file), content)?;
            found.push(file.to_owned());
        }
    }
    for file in FILES {
        if !found.iter().any(|f| f == file) {
            return Err(format!("the vendored Swagger UI has no dist/{file}").into());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    Ok(())
}
