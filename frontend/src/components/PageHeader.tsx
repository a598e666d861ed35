import type { ReactNode } from "react";
import { Link } from "react-router-dom";

interface Props {
  /** the page's h1: a name, or a trail ("Jobs / #12 sweep-k8") */
  title: ReactNode;
  /** what the thing is doing now, before the actions: a status badge, "live", "3 waiting" */
  status?: ReactNode;
  /** the page's buttons, at the right */
  children?: ReactNode;
  /** the primary link to start something new, last ("New job" to /new) */
  create?: { to: string; label: string };
}

/** Every page's first line: its title, then (at the right) its status and actions. */
export function PageHeader({ title, status, children, create }: Props) {
  return (
    <div className="page-head">
      <h1>{title}</h1>
      {(status || children || create) && (
        <div className="page-tools">
          {status}
          {children}
          {create && (
            <Link className="button primary" to={create.to}>
              {create.label}
            </Link>
          )}
        </div>
      )}
    </div>
  );
}
