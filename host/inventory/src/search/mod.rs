//! Structured search: a SearchRequest compiled to parameterized SQL over
//! one table, always scoped to the caller's tenant. Each searchable area
//! supplies a [`Table`] with its allow-list ([`Catalog`]).

mod coerce;
mod compile;
mod document;
mod matches;
mod ordered;
mod query;

use serde::{Deserialize, Serialize};
use sqlx::any::{AnyArguments, AnyRow};
use sqlx::{Arguments, FromRow};

use compile::TENANT_PLACEHOLDER;
pub use compile::{
    escape_like, Catalog, Column, Compiler, Field, FieldType, Part, SkippedRule, Terms,
};
pub use document::{fold, SearchDocument, Term, TermValue};
pub use matches::{kept_rows, KeptMatches, KeptRows};
pub use ordered::{kept_pages, KeptOrder, KeptPages};
pub use query::{
    Combinator, GroupKind, ListParams, Operator, QueryGroup, QueryNode, QueryRule, SearchRequest,
    DEFAULT_LIMIT, MAX_LIMIT,
};

use cairn_core::db::Db;
use cairn_core::ids::TenantId;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// A rule the search cannot take: an unknown field, an operator its
    /// field's type has no meaning for, a value not of that type. `path`
    /// names the part of the request (`query.rules[0].field`).
    #[error("{path}: {message}")]
    Rule { path: String, message: String },
    #[error("`{0}` is not a sortable field of this search")]
    Sort(String),
    #[error("{0}")]
    Page(&'static str),
    /// `skip` or `limit` outside the paging rule.
    #[error(transparent)]
    Bounds(cairn_core::http::error::ApiError),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Bound values one search may carry.
const MAX_PARAMETERS: usize = 10_000;
/// Rules one search may hold, and how deep groups may nest. SQLite refuses
/// expressions deeper than 1,000 (each rule of a group adds one level), so
/// a larger tree would fail in the database instead of here.
const MAX_RULES: usize = 256;
const MAX_DEPTH: usize = 16;

/// Rules in `group` and its subgroups, and its deepest nesting.
fn size(group: &QueryGroup) -> (usize, usize) {
    group
        .rules
        .iter()
        .fold((0, 1), |(rules, depth), node| match node {
            QueryNode::Rule(_) => (rules + 1, depth),
            QueryNode::Group(inner) => {
                let (r, d) = size(inner);
                (rules + r, depth.max(d + 1))
            }
        })
}

/// A searchable table.
pub struct Table<'a> {
    /// `FROM` clause naming the table with an alias, e.g. `applications a`.
    pub from: &'static str,
    /// Selected columns, matching the row type.
    pub columns: &'static str,
    /// The column holding each row's [`SearchDocument`].
    pub document: &'static str,
    pub tenant_column: &'static str,
    pub catalog: &'a dyn Catalog,
    /// Fields the free-text `search` is matched against (any of them).
    pub text_fields: &'static [&'static str],
    pub default_sort: &'static str,
    /// A unique column, last in every order, so pages never overlap.
    pub tiebreak: &'static str,
    /// A query (`$1`: the tenant) answering how many rows the tenant has,
    /// kept by the table's writer: an unfiltered page's total without a
    /// count of the whole table. NULL means not known (a count is run).
    pub kept_total: Option<&'static str>,
    /// The default order numbered by the table's writer: an unfiltered
    /// page in that order is an index seek at any depth.
    pub kept_order: Option<KeptOrder>,
    /// Searches keep their matches in memory while the rows stay as they
    /// were: a page after the first is read by id.
    pub kept_matches: Option<KeptMatches>,
}

/// One page of results and how many match in all: the shape of every
/// inventory and devices list.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub total: i64,
    pub skip: i64,
    pub limit: i64,
    /// A search's rules it left out (a field not in the allow-list, an
    /// unknown operator), each with its path and why; absent when none
    /// was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_rules: Vec<SkippedRule>,
}

impl<T> Page<T> {
    /// The same page with each item converted (row to view).
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            total: self.total,
            skip: self.skip,
            limit: self.limit,
            skipped_rules: self.skipped_rules,
        }
    }
}

/// `skip` and `limit` of a list route's query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Default 0.
    #[param(minimum = 0)]
    pub skip: Option<i64>,
    /// Default 50, at most 500.
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
}

impl PageParams {
    /// Checked as [`page_bounds`] checks them.
    pub fn bounds(&self) -> Result<(i64, i64), SearchError> {
        page_bounds(self.skip, self.limit)
    }
}

impl<T> Page<T> {
    /// A page of `items` out of `total`, at `bounds` (skip, limit).
    pub fn new(items: Vec<T>, total: i64, (skip, limit): (i64, i64)) -> Page<T> {
        Page {
            items,
            total,
            skip,
            limit,
            skipped_rules: vec![],
        }
    }
}

/// `skip` and `limit` checked by the one paging rule
/// ([`cairn_core::http::paging`]): a negative skip, or a limit outside 1
/// to [`MAX_LIMIT`], is refused.
pub fn page_bounds(skip: Option<i64>, limit: Option<i64>) -> Result<(i64, i64), SearchError> {
    cairn_core::http::paging::bounds(skip, limit, DEFAULT_LIMIT).map_err(SearchError::Bounds)
}

/// The request's free text as a group: any text field containing it.
fn text_group(table: &Table<'_>, request: &SearchRequest) -> Option<QueryGroup> {
    let text = request
        .search
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())?;
    Some(QueryGroup {
        kind: None,
        combinator: Combinator::Or,
        rules: table
            .text_fields
            .iter()
            .map(|field| {
                QueryNode::Rule(QueryRule::new(field, Operator::Contains, Some(text.into())))
            })
            .collect(),
    })
}

/// ` AND` the request's rules and free text, or nothing.
fn request_condition(
    compiler: &mut Compiler<'_>,
    table: &Table<'_>,
    request: &SearchRequest,
) -> Result<String, SearchError> {
    let mut condition = String::new();
    if let Some(query) = &request.query {
        if let Some(rules) = compiler.group(query, "query")? {
            condition.push_str(&format!(" AND {rules}"));
        }
    }
    if let Some(text) = text_group(table, request) {
        if let Some(rules) = compiler.group(&text, "search")? {
            condition.push_str(&format!(" AND {rules}"));
        }
    }
    Ok(condition)
}

/// Runs the search: the tenant filter, then the compiled rules.
pub async fn run<T>(
    db: &Db,
    tenant: &TenantId,
    table: &Table<'_>,
    request: &SearchRequest,
) -> Result<Page<T>, SearchError>
where
    T: for<'r> FromRow<'r, AnyRow> + serde::de::DeserializeOwned + Send + Unpin,
{
    let (skip, limit) = page_bounds(request.skip, request.limit)?;
    if let Some(query) = &request.query {
        check_size(query)?;
    }
    let mut compiler =
        Compiler::new(db.backend, table.catalog, table.document, 2).strict(request.strict);
    let condition = request_condition(&mut compiler, table, request)?;
    let skipped_rules = compiler.take_skipped();
    let mut page = page_of(
        db,
        tenant,
        table,
        request,
        &compiler,
        &condition,
        (skip, limit),
    )
    .await?;
    page.skipped_rules = skipped_rules;
    Ok(page)
}

/// The page of a compiled search.
async fn page_of<T>(
    db: &Db,
    tenant: &TenantId,
    table: &Table<'_>,
    request: &SearchRequest,
    compiler: &Compiler<'_>,
    condition: &str,
    (skip, limit): (i64, i64),
) -> Result<Page<T>, SearchError>
where
    T: for<'r> FromRow<'r, AnyRow> + serde::de::DeserializeOwned + Send + Unpin,
{
    // Well under SQLite's 32,766 bound parameters, so a huge query is the
    // client's error rather than the database's.
    if compiler.next_placeholder() > MAX_PARAMETERS {
        return Err(SearchError::Page("the query has too many values; split it"));
    }
    let sort = request.sort.as_deref().unwrap_or(table.default_sort);
    let order = compiler.order_by(sort, table.tiebreak)?;
    let filter = format!("{} = {TENANT_PLACEHOLDER}{condition}", table.tenant_column);
    let arguments = || {
        let mut args = AnyArguments::default();
        let _ = args.add(tenant.as_str().to_string());
        compiler.bind_into(&mut args);
        args
    };
    let next = compiler.next_placeholder();
    let count = format!("SELECT COUNT(*) FROM {} WHERE {filter}", table.from);
    let kept = table.kept_total.filter(|_| condition.is_empty());
    // Neither the count nor the page is a cached prepared statement:
    // PostgreSQL switches a cached one to a generic plan after five runs,
    // planned without the values, and a search's best plan depends on how
    // many rows its values match (a nested device search took 165 ms on the
    // generic plan, 78 ms planned with its values).
    let count_all = || {
        sqlx::query_scalar_with::<_, i64, _>(&count, arguments())
            .persistent(false)
            .fetch_one(&db.pool)
    };
    if let Some(order) = table
        .kept_order
        .as_ref()
        .filter(|order| condition.is_empty() && order.sort == sort)
    {
        if let Some(page) =
            ordered::page(db, tenant, table, order, (skip, limit), count_all).await?
        {
            return Ok(page);
        }
    }
    let mut known_total = None;
    if let Some(kept) = &table.kept_matches {
        let search = matches::Compiled {
            filter: &filter,
            order: &order,
            values: compiler.values_key(),
            next,
            arguments,
        };
        match matches::answer(db, tenant, table, kept, search, (skip, limit), count_all).await? {
            matches::Answer::Page(page) => return Ok(page),
            matches::Answer::Total(total) => known_total = Some(total),
            matches::Answer::Unknown => {}
        }
    }
    // Two connections at once: the page and the count each scan what the
    // filter cannot narrow by index, and neither needs the other.
    let select = format!(
        "SELECT {} FROM {} WHERE {filter} ORDER BY {order} LIMIT ${next} OFFSET ${}",
        table.columns,
        table.from,
        next + 1
    );
    let mut page_args = arguments();
    let _ = page_args.add(limit);
    let _ = page_args.add(skip);
    let total = async {
        if let Some(total) = known_total {
            return Ok(total);
        }
        if let Some(kept) = kept {
            let known: Option<Option<i64>> = sqlx::query_scalar(kept)
                .bind(tenant.as_str())
                .fetch_optional(&db.pool)
                .await?;
            if let Some(Some(total)) = known {
                return Ok(total);
            }
        }
        count_all().await
    };
    let (items, total) = tokio::try_join!(
        sqlx::query_as_with::<_, T, _>(&select, page_args)
            .persistent(false)
            .fetch_all(&db.pool),
        total,
    )?;
    Ok(Page::new(items, total, (skip, limit)))
}

/// Checks `query` against `catalog` as a search would compile it: an
/// unknown field, an operator that does not apply, a value of the wrong
/// type or a query too large is the error the search would give, its path
/// starting with `path` (the request field holding the query).
pub fn check(catalog: &dyn Catalog, query: &QueryGroup, path: &str) -> Result<(), SearchError> {
    check_size(query)?;
    // The engine only changes how SQL is spelt, not what is refused. A
    // stored query is checked strictly: a rule it would skip each time it
    // runs is refused when it is saved.
    Compiler::new(cairn_core::db::Backend::Sqlite, catalog, "doc", 2)
        .strict(true)
        .check(query, path)
}

/// Refuses a query too large or too deep to compile safely.
fn check_size(query: &QueryGroup) -> Result<(), SearchError> {
    let (rules, depth) = size(query);
    if rules > MAX_RULES {
        return Err(SearchError::Page(
            "the query has more than 256 rules; split it",
        ));
    }
    if depth > MAX_DEPTH {
        return Err(SearchError::Page(
            "the query nests groups more than 16 deep",
        ));
    }
    Ok(())
}

/// Every row of `table` the tenant has that `query` matches, with
/// `columns` selected, at most `cap` rows and no count: what a query that
/// narrows another figure needs.
pub async fn all_matching<T>(
    db: &Db,
    tenant: &TenantId,
    table: &Table<'_>,
    query: &QueryGroup,
    columns: &str,
    cap: i64,
) -> Result<Vec<T>, SearchError>
where
    T: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    check_size(query)?;
    let mut compiler = Compiler::new(db.backend, table.catalog, table.document, 2);
    let condition = compiler
        .group(query, "query")?
        .map(|c| format!(" AND {c}"))
        .unwrap_or_default();
    if compiler.next_placeholder() > MAX_PARAMETERS {
        return Err(SearchError::Page("the query has too many values; split it"));
    }
    let mut args = AnyArguments::default();
    let _ = args.add(tenant.as_str().to_string());
    compiler.bind_into(&mut args);
    let _ = args.add(cap);
    let select = format!(
        "SELECT {columns} FROM {} WHERE {} = {TENANT_PLACEHOLDER}{condition} LIMIT ${}",
        table.from,
        table.tenant_column,
        compiler.next_placeholder()
    );
    // Planned with its values, as in `run`.
    Ok(sqlx::query_as_with::<_, T, _>(&select, args)
        .persistent(false)
        .fetch_all(&db.pool)
        .await?)
}

// A search the client got wrong is a 422 naming the field to fix.
impl From<SearchError> for cairn_core::http::error::ApiError {
    fn from(err: SearchError) -> Self {
        match err {
            SearchError::Rule { path, message } => cairn_core::http::error::ApiError::Validation {
                field: path,
                message,
            },
            SearchError::Sort(_) => {
                cairn_core::http::error::ApiError::validation("sort", err.to_string())
            }
            SearchError::Page(message) => {
                cairn_core::http::error::ApiError::validation("query", message)
            }
            SearchError::Bounds(err) => err,
            SearchError::Database(err) => err.into(),
        }
    }
}
