import { useState } from "react";

interface Props {
  label: string;
  /** the question asked before acting, e.g. "Cancel job #5?" */
  question: string;
  confirmLabel: string;
  onConfirm: () => void;
  disabled?: boolean;
  testId?: string;
}

/** A destructive action asked twice, inline (a native confirm() would block the page and its tests). */
export function ConfirmButton({ label, question, confirmLabel, onConfirm, disabled, testId }: Props) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" className="button small danger" disabled={disabled} onClick={() => setAsking(true)} data-testid={testId}>
        {label}
      </button>
    );
  }
  return (
    <span className="confirm" role="group" aria-label={question}>
      <span className="small">{question}</span>
      <button
        type="button"
        className="button small danger"
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
        data-testid={testId && `${testId}-confirm`}
      >
        {confirmLabel}
      </button>
      <button type="button" className="button small" onClick={() => setAsking(false)}>
        Keep
      </button>
    </span>
  );
}
