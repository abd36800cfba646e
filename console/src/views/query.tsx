/** Query: the SQL editor, runs as jobs, paged results (being built). */
export default function Query() {
  return (
    <section>
      <h1>Query</h1>
      <p class="muted">The SQL editor arrives in the next commit.</p>
    </section>
  );
}
