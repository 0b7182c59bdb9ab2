//! [`CompileCache`]: where compiled policies are kept between processes, so
//! that a process that formats one ID does not compile its policy first.
//!
//! It is wasmtime's own cache of compiled code (`wasmtime::Cache`), in a
//! directory of idmint's: an entry is found by a hash of the component's
//! bytes and of everything about the engine that changes the compiled code
//! (wasmtime's version, its settings, the CPU's features), so a policy is
//! compiled once per machine per content, a changed file or stored version
//! is compiled afresh (other bytes, another entry), and a wasmtime upgrade
//! never loads an old entry. Writes are atomic (a file is renamed into
//! place), so processes can share the directory.
//!
//! The directory is `$IDMINT_POLICY_CACHE`, or `idmint/compiled-policies`
//! in `$XDG_CACHE_HOME` or else `~/.cache`; `IDMINT_POLICY_CACHE=off` turns
//! it off (every process compiles). `idmint policy cache` shows it and
//! `--clear` empties it. A directory that cannot be made or written costs
//! the compile and nothing else.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// The environment variable that names the cache's directory, or `off`.
pub const POLICY_CACHE_ENV: &str = "IDMINT_POLICY_CACHE";

/// Where compiled policies are kept between processes (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileCache {
    /// Not kept: every process compiles the policies it loads.
    Off,
    /// Kept in this directory (absolute).
    Directory(PathBuf),
}

/// What the cache holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CacheUsage {
    /// Compiled policies (one per content and engine).
    pub entries: u64,
    /// Their size on disk, compressed.
    pub bytes: u64,
}

impl CompileCache {
    /// The cache this process's environment asks for (see the module docs).
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// What is wrong with `IDMINT_POLICY_CACHE`, when it is set to neither
    /// `off` nor an absolute path (the cache is then off:
    /// [`CompileCache::from_env`] never fails, a process only compiles).
    pub fn env_problem() -> Option<String> {
        let value = std::env::var_os(POLICY_CACHE_ENV)?;
        let usable = value.is_empty() || value == "off" || Path::new(&value).is_absolute();
        (!usable).then(|| {
            format!(
                "{POLICY_CACHE_ENV} must be an absolute directory or `off`, not {:?}",
                value.to_string_lossy()
            )
        })
    }

    /// [`CompileCache::from_env`] over `var`, for tests.
    fn from_vars(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Self {
        let absolute = |path: PathBuf| Some(path).filter(|path| path.is_absolute());
        if let Some(named) = var(POLICY_CACHE_ENV).filter(|value| !value.is_empty()) {
            if named == "off" {
                return Self::Off;
            }
            return absolute(PathBuf::from(named)).map_or(Self::Off, Self::Directory);
        }
        let base = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .and_then(absolute)
            .or_else(|| absolute(PathBuf::from(var("HOME")?).join(".cache")));
        base.map_or(Self::Off, |base| {
            Self::Directory(base.join("idmint").join("compiled-policies"))
        })
    }

    /// The directory, unless the cache is off.
    pub fn directory(&self) -> Option<&Path> {
        match self {
            Self::Off => None,
            Self::Directory(path) => Some(path),
        }
    }

    /// What the cache holds now (nothing if its directory does not exist).
    pub fn usage(&self) -> std::io::Result<CacheUsage> {
        let mut usage = CacheUsage::default();
        if let Some(directory) = self.directory() {
            visit_entries(directory, &mut |path| {
                usage.entries += 1;
                usage.bytes += std::fs::metadata(path)?.len();
                Ok(())
            })?;
        }
        Ok(usage)
    }

    /// Empties the cache; returns what it held. Processes running now keep
    /// the policies they loaded; the next ones compile again.
    pub fn clear(&self) -> std::io::Result<CacheUsage> {
        let usage = self.usage()?;
        if let Some(directory) = self.directory() {
            match std::fs::remove_dir_all(directory) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
                _ => {}
            }
        }
        Ok(usage)
    }

    /// Why compiled policies cannot be kept in the directory (one that
    /// cannot be made, say), or `None` when they can or the cache is off:
    /// a runtime then compiles in the process, every time.
    pub fn problem(&self) -> Option<String> {
        self.wasmtime_cache().err()
    }

    /// The wasmtime cache over the directory, or why there is none.
    pub(crate) fn wasmtime_cache(&self) -> Result<Option<wasmtime::Cache>, String> {
        let Some(directory) = self.directory() else {
            return Ok(None);
        };
        let mut config = wasmtime::CacheConfig::new();
        config.with_directory(directory);
        wasmtime::Cache::new(config)
            .map(Some)
            .map_err(|error| format!("{error:#}"))
    }
}

/// Calls `each` with every compiled entry under `directory`: wasmtime's
/// files, less its usage statistics and the files of writes in progress.
fn visit_entries(
    directory: &Path,
    each: &mut dyn FnMut(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if entry.file_type()?.is_dir() {
            visit_entries(&path, each)?;
        } else if !name.ends_with(".stats") && !name.contains(".wip") {
            each(&path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(vars: &[(&str, &str)]) -> CompileCache {
        CompileCache::from_vars(|name| {
            vars.iter()
                .find(|(var, _)| *var == name)
                .map(|(_, value)| value.into())
        })
    }

    #[test]
    fn the_directory_comes_from_the_environment() {
        assert_eq!(
            cache(&[("IDMINT_POLICY_CACHE", "/srv/cache"), ("HOME", "/home/a")]),
            CompileCache::Directory("/srv/cache".into())
        );
        assert_eq!(
            cache(&[("IDMINT_POLICY_CACHE", "off"), ("HOME", "/home/a")]),
            CompileCache::Off
        );
        assert_eq!(
            cache(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/home/a")]),
            CompileCache::Directory("/x/idmint/compiled-policies".into())
        );
        assert_eq!(
            cache(&[("HOME", "/home/a")]),
            CompileCache::Directory("/home/a/.cache/idmint/compiled-policies".into())
        );
        // A relative path is not a place every process agrees on.
        assert_eq!(cache(&[("IDMINT_POLICY_CACHE", "rel")]), CompileCache::Off);
        assert_eq!(cache(&[]), CompileCache::Off);
    }
}
