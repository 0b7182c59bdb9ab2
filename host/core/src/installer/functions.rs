//! The server-side functions, embedded from `mongo-js/` at build time.
//!
//! Each top-level `mongo-js/<name>.js` holds one function expression whose
//! system.js `_id` is `<name>`. Files below `mongo-js/shell/` are scripts for
//! mongosh, not functions, and are not installed.

use include_dir::{include_dir, Dir};

static MONGO_JS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../mongo-js");

/// The path of the shell loader inside `mongo-js/`.
const SHELL_LOADER: &str = "shell/idmint-loader.js";

/// One function to store in system.js.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerFunction {
    /// Its system.js `_id` (the file stem).
    pub name: &'static str,
    /// The JavaScript source: one function expression.
    pub source: &'static str,
}

impl ServerFunction {
    /// sha256 of the source, lowercase hex.
    pub fn sha256(&self) -> String {
        crate::checksum::sha256_hex(self.source.as_bytes())
    }
}

/// Every function of `mongo-js/`, sorted by name.
pub fn server_functions() -> Vec<ServerFunction> {
    let mut functions: Vec<ServerFunction> = MONGO_JS
        .files()
        .filter(|file| file.path().extension().is_some_and(|ext| ext == "js"))
        .filter_map(|file| {
            Some(ServerFunction {
                name: file.path().file_stem()?.to_str()?,
                source: file.contents_utf8()?,
            })
        })
        .collect();
    functions.sort_by_key(|function| function.name);
    functions
}

/// The mongosh script that makes every installed function callable in a shell
/// session (mongosh has no `db.loadServerScripts()`).
pub fn shell_loader() -> &'static str {
    MONGO_JS
        .get_file(SHELL_LOADER)
        .and_then(|file| file.contents_utf8())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeds_the_seed_function_and_the_loader() {
        let names: Vec<_> = server_functions().iter().map(|f| f.name).collect();
        assert!(names.contains(&"getNextUniqueSeq"), "{names:?}");
        assert!(server_functions()
            .iter()
            .all(|f| f.source.trim_start().starts_with("function")));
        assert!(shell_loader().contains("system.js"));
    }
}
