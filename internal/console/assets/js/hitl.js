// Human in the loop: the panel of a thread that waits on an interrupt. An
// agent's approval request ({action_requests, review_configs}, see
// docs/configuration.md) gets Approve / Edit / Reject per tool call; any
// other interrupt shows its value and takes a JSON value to resume with.
// Either way the run continues with a new run whose command.resume carries
// the answer.
import { h, json, guard, toast } from './ui.js';

const DECISIONS = [['approve', 'Approve'], ['edit', 'Edit'], ['reject', 'Reject']];

// requestForm is one tool call waiting for a decision.
function requestForm(req, allowed, i) {
  let decision = allowed.includes('approve') ? 'approve' : allowed[0];
  const args = h('textarea', { class: 'hitl-args', rows: 5, spellcheck: 'false', 'aria-label': `arguments of ${req.name}` });
  args.value = JSON.stringify(req.args ?? {}, null, 2);
  const message = h('input', { type: 'text', class: 'hitl-message', placeholder: 'Why (sent to the agent)', 'aria-label': `reason to reject ${req.name}` });
  const editRow = h('label', { class: 'stack-label', hidden: true }, h('span', { class: 'small muted' }, 'Arguments to run the tool with (JSON)'), args);
  const rejectRow = h('label', { class: 'stack-label', hidden: true }, h('span', { class: 'small muted' }, 'Message'), message);
  const buttons = DECISIONS.filter(([d]) => allowed.includes(d)).map(([d, text]) => h('button', {
    type: 'button', class: `btn hitl-${d}`, 'aria-pressed': String(d === decision), dataset: { decision: d },
    onclick: () => choose(d),
  }, text));
  function choose(d) {
    decision = d;
    for (const b of buttons) b.setAttribute('aria-pressed', String(b.dataset.decision === d));
    editRow.hidden = d !== 'edit';
    rejectRow.hidden = d !== 'reject';
    if (d === 'edit') args.focus();
    if (d === 'reject') message.focus();
  }
  const el = h('div', { class: 'hitl-request', dataset: { tool: req.name, index: i } },
    h('div', { class: 'row' }, h('strong', { class: 'grow' }, req.name), h('div', { class: 'row', role: 'group', 'aria-label': `decision on ${req.name}` }, buttons)),
    req.description && h('p', { class: 'small muted' }, req.description),
    json(req.args ?? {}),
    editRow, rejectRow);
  el.decision = () => {
    if (decision === 'edit') {
      try { return { type: 'edit', args: JSON.parse(args.value) }; } catch (err) { throw new Error(`The arguments of ${req.name} are not JSON: ${err.message}`); }
    }
    if (decision === 'reject') return message.value.trim() ? { type: 'reject', message: message.value.trim() } : { type: 'reject' };
    return { type: 'approve' };
  };
  return el;
}

/**
 * interruptPanel shows the interrupts a thread waits on; resume(command)
 * starts the run that answers them and returns it.
 */
export function interruptPanel(interrupts, resume) {
  const values = interrupts.map((i) => i?.value ?? i);
  const approval = values.find((v) => v && Array.isArray(v.action_requests));
  const go = h('button', { type: 'submit', class: 'btn primary', id: 'hitl-resume' }, 'Resume');
  let body;
  let command;
  if (approval) {
    const configs = new Map((approval.review_configs || []).map((c) => [c.action_name, c.allowed_decisions]));
    const forms = approval.action_requests.map((req, i) => requestForm(req, configs.get(req.name) || DECISIONS.map(([d]) => d), i));
    body = forms;
    command = () => ({ resume: { decisions: forms.map((f) => f.decision()) } });
  } else {
    const value = h('textarea', { class: 'hitl-args', id: 'hitl-value', rows: 3, spellcheck: 'false', 'aria-label': 'value to resume with (JSON)' });
    value.value = 'true';
    body = [values.map((v) => json(v)), h('label', { class: 'stack-label' }, h('span', { class: 'small muted' }, 'Resume with (JSON)'), value)];
    command = () => {
      try { return { resume: JSON.parse(value.value) }; } catch (err) { throw new Error(`The resume value is not JSON: ${err.message}`); }
    };
  }
  const form = h('form', { class: 'hitl', id: 'hitl-panel', 'aria-label': 'waiting for a human', onsubmit: (e) => {
    e.preventDefault();
    guard(async () => {
      const run = await resume(command());
      toast('Resumed');
      location.hash = `#/threads/${run.thread_id}/runs/${run.run_id}`;
    });
  } },
  h('div', { class: 'row' }, h('h3', { class: 'grow hitl-title' }, approval ? 'Waiting for your approval' : 'Waiting for input'), go),
  body);
  return form;
}
