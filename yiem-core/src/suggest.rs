//! "Did you mean ...?" for names a model misspelt (tools, properties).

/// The known name closest to `typed`, if it is close enough to be a misspelling: equal once case, `_` and
/// `-` are ignored (`firstName` for `first_name`), within a small edit distance (1 for names up to 3
/// characters, 2 up to 8, else 3), or one a prefix of the other (`zip_code` for `zip`).
pub(crate) fn did_you_mean<'a>(
    typed: &str,
    known: impl Iterator<Item = &'a String>,
) -> Option<&'a str> {
    let fold = |s: &str| {
        s.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let typed_folded = fold(typed);
    let limit = match typed_folded.chars().count() {
        0..=3 => 1,
        4..=8 => 2,
        _ => 3,
    };
    known
        .filter_map(|name| {
            let folded = fold(name);
            let distance = strsim::damerau_levenshtein(&typed_folded, &folded);
            let (short, long) = if folded.len() < typed_folded.len() {
                (&folded, &typed_folded)
            } else {
                (&typed_folded, &folded)
            };
            let prefix = short.len() >= 3 && long.starts_with(short.as_str());
            match (distance <= limit, prefix) {
                (true, _) => Some((distance, name)),
                (false, true) => Some((limit + 1, name)),
                (false, false) => None,
            }
        })
        .min_by_key(|(score, _)| *score)
        .map(|(_, name)| name.as_str())
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    fn closest<'a>(typed: &str, names: &'a [String]) -> Option<&'a str> {
        did_you_mean(typed, names.iter())
    }

    #[test]
    fn a_typo_finds_the_intended_tool_name() {
        let names: Vec<String> = ["get_weather", "get_time", "list_tools"]
            .map(String::from)
            .to_vec();
        assert_eq!(closest("get_wether", &names), Some("get_weather"));
        assert_eq!(closest("gettime", &names), Some("get_time"));
        assert_eq!(closest("list_tool", &names), Some("list_tools"));
    }

    #[test]
    fn an_unrelated_name_finds_nothing() {
        let names: Vec<String> = ["get_weather", "get_time"].map(String::from).to_vec();
        assert_eq!(closest("send_email", &names), None);
    }
}
