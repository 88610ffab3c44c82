/**
 * C0 controls (but tab and newline), DEL and C1 controls. What a target answers or a sender writes
 * may carry terminal escapes (`ESC]0;…BEL`, `ESC[2J`): printed raw they retitle or clear the
 * operator's terminal, or hide what is on it. A C1 control (0x9b is a one-byte CSI) acts like ESC.
 */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
const CONTROL_OR_LINE = /[\u0000-\u001f\u007f-\u009f]/g;

/** The text without control characters; tabs and newlines kept unless `oneLine`. */
export function stripControl(text: string, oneLine = false): string {
  return text.replace(oneLine ? CONTROL_OR_LINE : CONTROL, '');
}
