//! The one paging rule of every list (docs/src/using.md, "Lists and
//! paging"): `skip` (0 or more, default 0) and `limit` (1 to
//! [`MAX_LIMIT`]); anything else is a 422 naming the parameter rather
//! than a page silently cut, so a client never mistakes a short page
//! for the end of the list.

use super::error::ApiError;

/// The default page size where a list says no other.
pub const DEFAULT_LIMIT: i64 = 50;
/// The largest page any list answers.
pub const MAX_LIMIT: i64 = 500;

/// `skip` and `limit` checked, with `default_limit` for an absent limit.
pub fn bounds(
    skip: Option<i64>,
    limit: Option<i64>,
    default_limit: i64,
) -> Result<(i64, i64), ApiError> {
    let skip = skip.unwrap_or(0);
    if skip < 0 {
        return Err(ApiError::validation("skip", "must be 0 or more"));
    }
    let limit = limit.unwrap_or(default_limit);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::validation(
            "limit",
            format!("must be 1 to {MAX_LIMIT}"),
        ));
    }
    Ok((skip, limit))
}

/// The items of a whole list at (`skip`, `limit`), and the list's length:
/// for lists read whole (small, or ordered in Rust).
pub fn slice<T>(items: Vec<T>, (skip, limit): (i64, i64)) -> (Vec<T>, i64) {
    let total = items.len() as i64;
    let page = items
        .into_iter()
        .skip(skip.max(0) as usize)
        .take(limit.max(0) as usize)
        .collect();
    (page, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// skip, limit, and the page or the refused parameter.
    type Case = (Option<i64>, Option<i64>, Result<(i64, i64), &'static str>);

    #[test]
    fn bounds_refuse_what_the_rule_does_not_allow() {
        let cases: &[Case] = &[
            (None, None, Ok((0, 50))),
            (Some(20), Some(500), Ok((20, 500))),
            (Some(0), Some(1), Ok((0, 1))),
            (Some(-1), None, Err("skip")),
            (None, Some(0), Err("limit")),
            (None, Some(501), Err("limit")),
        ];
        for (skip, limit, want) in cases {
            let got = bounds(*skip, *limit, DEFAULT_LIMIT);
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want),
                (Err(ApiError::Validation { field, .. }), Err(want)) => assert_eq!(field, *want),
                (got, want) => panic!("{skip:?} {limit:?}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn a_slice_counts_the_whole_list() {
        let items: Vec<i32> = (0..7).collect();
        assert_eq!(slice(items.clone(), (0, 3)), (vec![0, 1, 2], 7));
        assert_eq!(slice(items.clone(), (6, 3)), (vec![6], 7));
        assert_eq!(slice(items, (9, 3)), (vec![], 7));
    }
}
