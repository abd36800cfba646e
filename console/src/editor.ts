/**
 * The SQL editor: CodeMirror 6 with SQL highlighting; the jobs service's check underlines errors as
 * one types (debounced), completion offers the caller's datasets and their columns, Ctrl/Cmd+Enter runs.
 * Loaded with the query view only, so the first load of the console does not carry it.
 */
import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap, type CompletionContext, type CompletionResult } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { bracketMatching, defaultHighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { sql, StandardSQL, type SQLNamespace } from '@codemirror/lang-sql';
import { linter, lintGutter, type Diagnostic } from '@codemirror/lint';
import { Compartment, EditorState, Prec } from '@codemirror/state';
import { EditorView, highlightActiveLine, keymap, lineNumbers, placeholder } from '@codemirror/view';
import type { CheckResult } from './api.ts';

export interface SqlEditorOptions {
  doc: string;
  /** The check of the current text (the caller debounces nothing: the linter does). */
  check: (sqlText: string) => Promise<CheckResult>;
  onChange: (sqlText: string) => void;
  onRun: () => void;
  /** The names completion starts from (workspaces), before any check has answered. */
  workspaces: string[];
  label: string;
}

export interface SqlEditor {
  view: EditorView;
  setText(text: string): void;
  destroy(): void;
}

/** Where a check error is: its offsets, else its line and column, else the whole text. */
export function errorRange(text: string, error: NonNullable<CheckResult['error']>): { from: number; to: number } {
  const clamp = (n: number) => Math.max(0, Math.min(text.length, n));
  if (typeof error.start === 'number') {
    const from = clamp(error.start);
    const to = clamp(typeof error.end === 'number' && error.end > error.start ? error.end : from + 1);
    return from === to && from > 0 ? { from: from - 1, to } : { from, to };
  }
  if (typeof error.line === 'number') {
    const lines = text.split('\n');
    const lineStart = lines.slice(0, error.line - 1).reduce((n, l) => n + l.length + 1, 0);
    const from = clamp(lineStart + Math.max(0, (error.column ?? 1) - 1));
    return { from, to: clamp(from + 1) };
  }
  return { from: 0, to: text.length };
}

/** The completion schema: workspaces, then each relation the check reported, with its columns. */
function namespaceOf(workspaces: string[], relations: CheckResult['relations']): SQLNamespace {
  const root: Record<string, SQLNamespace> = {};
  for (const ws of workspaces) root[ws] = {};
  for (const relation of relations) {
    const parts = relation.name.split('.');
    let level = root;
    for (const part of parts.slice(0, -1)) {
      if (!level[part] || Array.isArray(level[part])) level[part] = {};
      level = level[part] as Record<string, SQLNamespace>;
    }
    level[parts[parts.length - 1]] = relation.columns.map((c) => ({ label: c.name, detail: c.type, type: 'property' }));
  }
  return root;
}

export function createSqlEditor(parent: HTMLElement, options: SqlEditorOptions): SqlEditor {
  const language = new Compartment();
  let relations: CheckResult['relations'] = [];
  const configure = () => sql({ dialect: StandardSQL, schema: namespaceOf(options.workspaces, relations), upperCaseKeywords: true });
  // Unqualified column names of the datasets the statement names (lang-sql completes `ws.coll.ds.col`).
  const columns = (context: CompletionContext): CompletionResult | null => {
    const word = context.matchBefore(/\w+/);
    if (!word && !context.explicit) return null;
    const options = relations.flatMap((r) => r.columns.map((c) => ({ label: c.name, detail: `${c.type} · ${r.name}`, type: 'property', boost: 1 })));
    return options.length ? { from: word?.from ?? context.pos, options, validFor: /^\w*$/ } : null;
  };

  const checker = linter(
    async (view): Promise<Diagnostic[]> => {
      const text = view.state.doc.toString();
      if (!text.trim()) return [];
      let result: CheckResult;
      try {
        result = await options.check(text);
      } catch {
        return []; // the check itself failed (signed out, offline): the run shows that error
      }
      if (view.state.doc.toString() !== text) return [];
      const names = result.relations.map((r) => r.name).join();
      if (names !== relations.map((r) => r.name).join()) {
        relations = result.relations;
        view.dispatch({ effects: language.reconfigure(configure()) });
      }
      if (result.ok || !result.error) return [];
      const { from, to } = errorRange(text, result.error);
      return [{ from, to, severity: 'error', message: `${result.error.message} (${result.error.code})`, source: 'check' }];
    },
    { delay: 400 },
  );

  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: options.doc,
      extensions: [
        lineNumbers(),
        history(),
        bracketMatching(),
        closeBrackets(),
        highlightActiveLine(),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        placeholder('SELECT … FROM workspace.collection.dataset'),
        language.of(configure()),
        EditorState.languageData.of(() => [{ autocomplete: columns }]),
        autocompletion(),
        checker,
        lintGutter(),
        Prec.highest(keymap.of([{ key: 'Mod-Enter', run: () => (options.onRun(), true) }])),
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap, indentWithTab]),
        EditorView.contentAttributes.of({ 'aria-label': options.label }),
        // CodeMirror's <style> element carries the page's CSP nonce (src/services/console).
        EditorView.cspNonce.of(document.querySelector<HTMLMetaElement>('meta[name="lakeport-csp-nonce"]')?.content ?? ''),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) options.onChange(update.state.doc.toString());
        }),
      ],
    }),
  });
  return {
    view,
    setText(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    destroy: () => view.destroy(),
  };
}
