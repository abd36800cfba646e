import type { ComponentChildren } from 'preact';
import { navigate } from './router.ts';

/** An anchor that navigates inside the console (a modified click still opens a new tab). */
export function Link({ href, children, class: className, ...rest }: { href: string; children: ComponentChildren; class?: string; 'aria-current'?: 'page' }) {
  return (
    <a
      href={href}
      class={className}
      {...rest}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}
