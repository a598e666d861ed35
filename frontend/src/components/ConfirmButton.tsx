import { useState } from "react";

interface Props {
  label: string;
  /** the question asked before acting, e.g. "Cancel job #5?" */
  question: string;
  confirmLabel: string;
  keepLabel?: string;
  onConfirm: () => void;
  disabled?: boolean;
  testId?: string;
  /** the confirm button's test id (default `${testId}-confirm`) */
  confirmTestId?: string;
  /** a small button (a table row's, a page's secondary action) or a full one */
  small?: boolean;
  /** whether the question is shown, when a hook owns that (useHoldReleaseCancel); else kept here */
  asking?: boolean;
  onAsking?: (asking: boolean) => void;
}

/** A destructive action asked twice, inline (a native confirm() would block the page and its tests). */
export function ConfirmButton(props: Props) {
  const { label, question, confirmLabel, keepLabel = "Keep", onConfirm, disabled, testId, small = true } = props;
  const [ownAsking, setOwnAsking] = useState(false);
  const asking = props.asking ?? ownAsking;
  const setAsking = props.onAsking ?? setOwnAsking;
  const size = small ? " small" : "";
  if (!asking) {
    return (
      <button type="button" className={`button${size} danger`} disabled={disabled} onClick={() => setAsking(true)} data-testid={testId}>
        {label}
      </button>
    );
  }
  return (
    <span className="confirm" role="group" aria-label={question}>
      <span className="small">{question}</span>
      <button
        type="button"
        className={`button${size} danger`}
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
        data-testid={props.confirmTestId ?? (testId && `${testId}-confirm`)}
      >
        {confirmLabel}
      </button>
      <button type="button" className={`button${size}`} onClick={() => setAsking(false)}>
        {keepLabel}
      </button>
    </span>
  );
}
