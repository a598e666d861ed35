import type { ReactNode } from "react";

interface Props {
  /** the page's h1: a name, or a trail ("Jobs / #12 sweep-k8") */
  title: ReactNode;
  /** what the thing is doing now, before the actions: a status badge, "live" */
  status?: ReactNode;
  /** the page's buttons and links, at the right */
  children?: ReactNode;
}

/** Every page's first line: its title, then (at the right) its status and actions. */
export function PageHeader({ title, status, children }: Props) {
  return (
    <div className="page-head">
      <h1>{title}</h1>
      {(status || children) && (
        <div className="page-tools">
          {status}
          {children}
        </div>
      )}
    </div>
  );
}
