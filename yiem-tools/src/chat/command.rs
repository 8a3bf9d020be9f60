//! The chat's slash commands: which line is a command, and what it asks for.

use std::path::PathBuf;

/// What a line that starts with `/` asks for.
///
/// ```text
/// /tools          the tools the agent has
/// /model [NAME]   the model it talks to, or talk to NAME (same provider) from now on
/// /reset          start a new conversation
/// /save FILE      write the conversation (the serialized run, signed with the user's key) to FILE
/// /load FILE      continue the conversation saved in FILE
/// /help           the commands
/// /exit           leave (as Ctrl-D does)
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum ChatCommand {
    /// `/help`.
    Help,
    /// `/tools`.
    Tools,
    /// `/model`, or `/model NAME`: switch to the provider's model NAME.
    Model(Option<String>),
    /// `/reset`.
    Reset,
    /// `/save FILE`.
    Save(PathBuf),
    /// `/load FILE`.
    Load(PathBuf),
    /// `/exit` (or `/quit`).
    Exit,
}

/// The commands, one per line, as `/help` shows them.
pub const HELP: &str = "\
/tools        the tools the agent has
/model [NAME] the model it talks to; with NAME, talk to that model of the provider from now on
/reset        start a new conversation
/save FILE    write the conversation to FILE (JSON, the serialized run, signed with your key)
/load FILE    continue the conversation saved in FILE
/exit         leave (Ctrl-D at an empty prompt does too)
A line ending in `\\` (or Alt-Enter) continues on the next line; `//text` sends `/text` to the model.";

/// The command `line` asks for: `None` when it is a prompt for the model (it does not start with a
/// single `/`), `Err` with what to type instead when it is a command that is unknown or lacks its file.
///
/// ```text
/// assert_eq!(parse("/save run.json"), Some(Ok(ChatCommand::Save("run.json".into()))));
/// assert_eq!(parse("hello"), None);
/// ```
pub fn parse(line: &str) -> Option<Result<ChatCommand, String>> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?;
    if rest.starts_with('/') {
        return None;
    }
    let (name, argument) = match rest.split_once(char::is_whitespace) {
        Some((name, argument)) => (name, argument.trim()),
        None => (rest, ""),
    };
    let file = |command: fn(PathBuf) -> ChatCommand| {
        if argument.is_empty() {
            Err(format!("/{name} needs a file: /{name} FILE"))
        } else {
            Ok(command(PathBuf::from(argument)))
        }
    };
    let no_argument = |command: ChatCommand| {
        if argument.is_empty() {
            Ok(command)
        } else {
            Err(format!("/{name} takes no argument"))
        }
    };
    Some(match name {
        "help" | "?" => no_argument(ChatCommand::Help),
        "tools" => no_argument(ChatCommand::Tools),
        "model" => Ok(ChatCommand::Model(
            (!argument.is_empty()).then(|| argument.to_owned()),
        )),
        "reset" | "clear" => no_argument(ChatCommand::Reset),
        "save" => file(ChatCommand::Save),
        "load" => file(ChatCommand::Load),
        "exit" | "quit" => no_argument(ChatCommand::Exit),
        _ => Err(format!(
            "unknown command `/{name}`: use /tools, /model, /reset, /save FILE, /load FILE, /help or /exit"
        )),
    })
}

/// The prompt `line` sends: a leading `//` stands for a literal `/`.
pub fn prompt_text(line: &str) -> &str {
    match line.strip_prefix("//") {
        Some(_) => &line[1..],
        None => line,
    }
}

/// The names `/`-completion offers.
pub const NAMES: &[&str] = &[
    "/exit", "/help", "/load ", "/model", "/reset", "/save ", "/tools",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_with_its_file() {
        assert_eq!(
            parse("/save  run.json "),
            Some(Ok(ChatCommand::Save("run.json".into())))
        );
        assert_eq!(
            parse("/load dir/a b.json"),
            Some(Ok(ChatCommand::Load("dir/a b.json".into())))
        );
    }

    #[test]
    fn a_prompt_is_no_command() {
        assert_eq!(parse("hello /tools"), None);
        assert_eq!(parse("//tools"), None);
        assert_eq!(prompt_text("//tools"), "/tools");
        assert_eq!(prompt_text("hi"), "hi");
    }

    #[test]
    fn mistakes_say_what_to_type() {
        assert_eq!(
            parse("/save"),
            Some(Err("/save needs a file: /save FILE".into()))
        );
        assert_eq!(
            parse("/model gpt-5"),
            Some(Ok(ChatCommand::Model(Some("gpt-5".into()))))
        );
        assert_eq!(parse("/model"), Some(Ok(ChatCommand::Model(None))));
        assert_eq!(
            parse("/tools x"),
            Some(Err("/tools takes no argument".into()))
        );
        let Some(Err(unknown)) = parse("/frobnicate") else {
            panic!("an unknown command is an error");
        };
        assert!(unknown.starts_with("unknown command `/frobnicate`: use /tools"));
    }
}
