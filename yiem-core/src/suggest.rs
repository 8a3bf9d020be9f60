//! "Did you mean ...?" for names a model misspelt (tools, properties).

/// The candidate closest to `input` by edit distance, if it is close enough to be a plausible typo: at most
/// a third of the input's length (and at least one edit) away.
pub(crate) fn closest<'a>(
    input: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (input.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|candidate| (strsim::damerau_levenshtein(input, candidate), candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn a_typo_finds_the_intended_name() {
        let names = ["get_weather", "get_time", "list_tools"];
        assert_eq!(closest("get_wether", names), Some("get_weather"));
        assert_eq!(closest("gettime", names), Some("get_time"));
        assert_eq!(closest("list_tool", names), Some("list_tools"));
    }

    #[test]
    fn an_unrelated_name_finds_nothing() {
        assert_eq!(closest("send_email", ["get_weather", "get_time"]), None);
        assert_eq!(closest("x", ["yz"]), None);
    }
}
