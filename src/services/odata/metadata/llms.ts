/** The token endpoint beside the OData prefix: `https://host/odata` → `https://host/auth/token`. */
export function tokenUrlFor(baseUrl: string): string {
  return new URL('../auth/token', `${baseUrl.replace(/\/+$/, '')}/`).toString();
}

/**
 * `/.well-known/llms.txt`: plain-text directives for automated agents (https://llmstxt.org form).
 * `baseUrl` is the public URL of the OData prefix, e.g. `https://lakeport.example.com/odata`.
 */
export function llmsTxt(baseUrl: string, tokenUrl: string = tokenUrlFor(baseUrl)): string {
  const root = `${baseUrl.replace(/\/+$/, '')}/api/v4`;
  return `# Lakeport OData v4

> Read-only OData v4 (JSON rows, EDMX metadata) over Lakeport's versioned datasets. Service root: ${root}
> A dataset is {workspace}/{collection}/{dataset}. Every request needs credentials. GET only.

## Authenticate

- Preferred: an OAuth 2.0 client_credentials token from ${tokenUrl} (the credential needs the \`odata\` scope),
  sent as \`Authorization: Bearer <access_token>\`. expires_in is in seconds; request a new token when it runs out.
    curl -s -u "$CLIENT_ID:$CLIENT_SECRET" -d grant_type=client_credentials ${tokenUrl}
    TOKEN=$(curl -s -u "$CLIENT_ID:$CLIENT_SECRET" -d grant_type=client_credentials ${tokenUrl} | jq -r .access_token)
- Or HTTP Basic with the client credentials on every OData request: curl -u "$CLIENT_ID:$CLIENT_SECRET" ...
- 401: missing or invalid credentials. 403: authenticated, but not allowed to read that dataset.

## Discover

- Service document: GET ${root}/ lists every dataset you may read: {"name", "kind": "EntitySet", "url": "ws/coll/ds", "title": "ws / coll / ds"}.
- Metadata for all of them: GET ${root}/$metadata (EDMX XML).
- Metadata for one: GET ${root}/{ws}/{coll}/{ds}/$metadata (also with a version: {ds}@{label}).
- Read it before querying: Property Name and Type per column (use these names in $select, $filter, $orderby),
  Nullable, Custom.Description (what a dataset or column means), Custom.Statistics (Min, Max, NullCount,
  DistinctValueCount, CIDR) to pick sensible filter values, Custom.Snapshot (Id, TotalRecords), Custom.Tags,
  Custom.Role (your role). _lakeport_row_id is a synthetic key (row position in the version).
- One row by its key: GET ${root}/{ws}/{coll}/{ds}(42) (a single entity). The number of rows matching a
  filter: GET ${root}/{ws}/{coll}/{ds}/$count?$filter=... (plain text).

## Versions

- {ds} or {ds}@current: the latest version. {ds}@previous: the version before the latest change of rows.
- {ds}@{tag} or {ds}@{snapshot_id}: a fixed version. @current and @previous are re-resolved on every page;
  to page through data that may change, pin the version: use the Custom.Snapshot Id from $metadata.

## Query options (GET ${root}/{ws}/{coll}/{ds}?...)

- $select=col1,col2 (default: all)   $orderby=col1 asc,col2 desc (default asc)   $count=true
- $top=N: the page size, 0 to 25000, default 100; when more rows follow, the page ends with @odata.nextLink. $top=0&$count=true returns only the count.
- $skip=N: needs $orderby, never negative.
- $filter, $apply: below. $search and $expand are not implemented (501).
- URL-encode the values: curl -G with --data-urlencode does it.

## Filter ($filter)

- Operators: eq ne lt le gt ge and or not, with parentheses. Comparisons are case-sensitive.
- Strings in single quotes ('' for a quote): country eq 'NL'. Functions: contains(name,'abc'), startswith(name,'A'), endswith(email,'.org').
- Dates and timestamps are unquoted: order_date ge 2024-01-01, created_at lt 2024-06-01T00:00:00Z.
  A quoted date is a string and fails with a type mismatch (400).
- Date parts: year(), month(), day(), hour(), minute(), second() give integers; date(ts) the date of a timestamp.
  now() is the query's start time (once per query). time(), mindatetime() and maxdatetime() are refused.
- Rolling windows: now() add or sub an ISO 8601 duration written duration'PnYnMnDTnHnMnS', optionally signed:
  created_at ge now() sub duration'P7D'    created_at ge now() sub duration'PT6H'    day ge now() sub duration'P1M'
  Years and months follow the calendar; days, hours, minutes and seconds are fixed spans.
- IPv4 columns (Edm.String, MaxLength 15, Custom.Statistics CIDR): in_subnet(client_ip,'10.0.0.0/8').

## Page

- A response is {"@odata.context": ..., "value": [rows...]} plus "@odata.count" when $count=true.
- When more rows exist it carries "@odata.nextLink": GET that URL as it is, with the same credentials,
  until a response has no nextLink. Do not build $skip pages yourself for large reads.

## Aggregate ($apply)

- groupby((col1,col2),aggregate(amount with sum as total,$count as n))
- Aggregates are written 'col with fn as Alias' where fn is sum, average, min or max, or '$count as Alias'.
  Call forms such as sum(amount) are refused.
- Chain steps with '/': filter(amount gt 0)/groupby((country),aggregate(amount with average as avg_amount)).
- groupby((col)) without aggregate returns the distinct values.

## Errors

- JSON {"detail": "human message", "code": "UPPER_SNAKE"}. 400: malformed $filter or $apply, $top outside 0-25000,
  negative $skip, $skip without $orderby, bad $count, malformed @label, or $metadata of a dataset kind without versions.
  404: no such dataset, tag, snapshot or previous version. 501: $search, $expand.

## Examples

    curl -s -H "Authorization: Bearer $TOKEN" ${root}/
    curl -s -H "Authorization: Bearer $TOKEN" ${root}/sales/raw/orders/\\$metadata
    curl -s -G -H "Authorization: Bearer $TOKEN" ${root}/sales/raw/orders \\
      --data-urlencode "\\$select=order_id,country,amount" \\
      --data-urlencode "\\$filter=country eq 'NL' and order_date ge 2024-01-01" \\
      --data-urlencode "\\$orderby=order_id" --data-urlencode "\\$top=1000"
    curl -s -G -u "$CLIENT_ID:$CLIENT_SECRET" ${root}/sales/raw/orders@v2024_q4 \\
      --data-urlencode "\\$filter=created_at ge now() sub duration'P30D'" --data-urlencode "\\$count=true" --data-urlencode "\\$top=0"
    curl -s -G -H "Authorization: Bearer $TOKEN" ${root}/sales/raw/orders \\
      --data-urlencode "\\$apply=filter(amount gt 0)/groupby((country),aggregate(amount with sum as total,\\$count as n))"
    curl -s -G -H "Authorization: Bearer $TOKEN" ${root}/net/logs/requests \\
      --data-urlencode "\\$filter=in_subnet(client_ip,'10.0.0.0/8')"
`;
}
