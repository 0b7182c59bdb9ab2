//! `idmint token add|list|remove`: the application tokens `idmint serve
//! --tokens-from-db` accepts, kept in the tokens collection as SHA-256
//! hashes (`idmint::tokens::add_app`).

use clap::{Args, Subcommand};
use idmint::tokens::{add_app, list_apps, remove_app, AppEntry};
use serde::Serialize;

use super::{ConnectArgs, Outcome, Output};

/// `idmint token ...`
#[derive(Debug, Subcommand)]
pub enum TokenCmd {
    /// Make a token for an app, allowed some counters; prints the token, once (only its
    /// SHA-256 is stored).
    Add(AddArgs),
    /// List the apps with a token and their counters.
    List(ListArgs),
    /// Remove an app's token (servers stop accepting it within 10 s).
    Remove(RemoveArgs),
}

/// Arguments of `idmint token add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The app's name: 1 to 64 letters, digits, _ - .
    pub app: String,
    /// The counters it may use, comma-separated; * for all.
    #[arg(long, value_delimiter = ',', required = true)]
    pub counters: Vec<String>,
    /// The only prefixes it may format IDs with, comma-separated (each still
    /// owned by the counter it asks); default: any its counters own.
    #[arg(long, value_delimiter = ',')]
    pub prefixes: Option<Vec<String>>,
    /// The locks it may take through `idmint serve`, comma-separated; * for
    /// all; default: none.
    #[arg(long, value_delimiter = ',')]
    pub locks: Vec<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `idmint token list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Arguments of `idmint token remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The app's name.
    pub app: String,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

#[derive(Serialize)]
struct Added<'a> {
    app: &'a str,
    counters: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    locks: &'a [String],
    token: &'a str,
}

/// What an app may use, as `token add` and `token list` say it.
fn grants(counters: &[String], locks: &[String]) -> String {
    let mut said = format!("counters {}", counters.join(","));
    if !locks.is_empty() {
        said.push_str(&format!(", locks {}", locks.join(",")));
    }
    said
}

#[derive(Serialize)]
struct Listed<'a> {
    apps: &'a [AppEntry],
}

impl TokenCmd {
    /// The connection the command uses.
    pub fn connect(&self) -> &ConnectArgs {
        match self {
            TokenCmd::Add(args) => &args.connect,
            TokenCmd::List(args) => &args.connect,
            TokenCmd::Remove(args) => &args.connect,
        }
    }

    pub async fn execute(&self, output: &Output) -> anyhow::Result<Outcome> {
        let database = self.connect().connect().await?;
        match self {
            TokenCmd::Add(args) => {
                let token = add_app(
                    &database,
                    &args.app,
                    &args.counters,
                    args.prefixes.as_deref(),
                    &args.locks,
                )
                .await
                .map_err(idmint::Error::from)?;
                let added = Added {
                    app: &args.app,
                    counters: &args.counters,
                    locks: &args.locks,
                    token: &token,
                };
                output.report(&added, || {
                    format!(
                        "token of app '{}' ({}): {token}\n\
                         It is shown only now; idmint keeps its SHA-256 only.",
                        args.app,
                        grants(&args.counters, &args.locks)
                    )
                })?;
            }
            TokenCmd::List(_) => {
                let apps = list_apps(&database).await.map_err(idmint::Error::from)?;
                output.report(&Listed { apps: &apps }, || {
                    if apps.is_empty() {
                        return "no app has a token".to_string();
                    }
                    apps.iter()
                        .map(|app| format!("{}: {}", app.name, grants(&app.counters, &app.locks)))
                        .collect::<Vec<_>>()
                        .join("\n")
                })?;
            }
            TokenCmd::Remove(args) => {
                remove_app(&database, &args.app)
                    .await
                    .map_err(idmint::Error::from)?;
                output.report(&serde_json::json!({ "removed": args.app }), || {
                    format!("removed the token of app '{}'", args.app)
                })?;
            }
        }
        Ok(Outcome::Success)
    }
}
