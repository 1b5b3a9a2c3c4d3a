// A test page for approxtune's Jupyter widgets under widget protocol 2 (the
// ipywidgets 8 front end that JupyterLab 4 and Notebook 7 use), without
// JupyterLab: it starts a kernel on the Jupyter server that serves it,
// executes code the test gives it, and renders what the kernel shows: widget
// views through a minimal HTMLManager wired to the kernel's comms, HTML and
// text outputs as they are.
//
// Open /static/index.html?token=T[&kernel=approxtune]. The test drives it
// through window.atune (see below) and the DOM: each execution is a
// div.cell[data-n] holding pre.code and div.outputs, each output a
// div.output[data-type] (with data-display-id when it has one).

import { KernelAPI, KernelConnection, ServerConnection, CommsOverSubshells } from '@jupyterlab/services';
import { shims } from '@jupyter-widgets/base';
import { HTMLManager } from '@jupyter-widgets/html-manager/lib/htmlmanager';
import '@jupyter-widgets/controls/css/widgets-base.css';

const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';

// Manager is HTMLManager talking to a kernel: comms from the kernel's
// connection, wrapped as the widget code expects.
class Manager extends HTMLManager {
  constructor(kernel) {
    super();
    this.kernel = kernel;
  }

  async _create_comm(target, modelId, data, metadata, buffers) {
    const comm = this.kernel.createComm(target, modelId);
    if (data || metadata) {
      comm.open(data, metadata, buffers);
    }
    return new shims.services.Comm(comm);
  }

  async _get_comm_info() {
    const reply = await this.kernel.requestCommInfo({ target_name: 'jupyter.widget' });
    return reply.content.status === 'ok' ? reply.content.comms : {};
  }
}

const params = new URLSearchParams(location.search);
const token = params.get('token') || '';
const kernelName = params.get('kernel') || 'approxtune';
const settings = ServerConnection.makeSettings({
  baseUrl: location.origin + '/',
  wsUrl: location.origin.replace(/^http/, 'ws') + '/',
  token,
  appendToken: true,
});

const state = {
  ready: false,
  error: '',
  kernelId: '',
  cells: [], // per execution: {code, status, outputs: [{type, text, html, displayId, widget}]}
  comms: [], // per widget comm the kernel opened: {version (protocol), model, module, moduleVersion}
  log: [],
};
let kernel = null;
let manager = null;

function log(s) {
  state.log.push(s);
  document.getElementById('log').textContent = state.log.join('\n');
}

function plainText(data) {
  const t = data['text/plain'];
  return Array.isArray(t) ? t.join('') : t || '';
}

// render fills el with one output's data: a widget view, HTML, an image, or text.
async function render(el, rec, data) {
  el.textContent = '';
  rec.text = plainText(data);
  rec.html = typeof data['text/html'] === 'string' ? data['text/html'] : '';
  rec.mimes = Object.keys(data);
  if (data[WIDGET_VIEW]) {
    rec.widget = data[WIDGET_VIEW].model_id;
    const model = await manager.get_model(rec.widget);
    const view = await manager.create_view(model, {});
    await manager.display_view(view, el);
    el.dataset.widget = rec.widget;
  } else if (rec.html) {
    el.innerHTML = rec.html;
  } else if (data['image/png']) {
    const img = document.createElement('img');
    img.src = 'data:image/png;base64,' + data['image/png'];
    el.appendChild(img);
  } else {
    const pre = document.createElement('pre');
    pre.textContent = rec.text;
    el.appendChild(pre);
  }
}

// execute runs code in the kernel as a new cell, rendering its outputs as
// they come; it resolves when the kernel is idle again, to the cell's
// record: {n, status, text (every output's text/plain, joined), outputs}.
async function execute(code) {
  const n = state.cells.length;
  const cell = { n, code, status: 'running', outputs: [] };
  state.cells.push(cell);
  const div = document.createElement('div');
  div.className = 'cell';
  div.dataset.n = String(n);
  const pre = document.createElement('pre');
  pre.className = 'code';
  pre.textContent = code;
  const outs = document.createElement('div');
  outs.className = 'outputs';
  div.append(pre, outs);
  document.getElementById('cells').appendChild(div);

  const pending = [];
  const add = (type, data, displayId) => {
    const el = document.createElement('div');
    el.className = 'output';
    el.dataset.type = type;
    if (displayId) {
      el.dataset.displayId = displayId;
    }
    outs.appendChild(el);
    const rec = { type, displayId: displayId || '' };
    cell.outputs.push(rec);
    pending.push(render(el, rec, data).catch((e) => log(`render: ${e}`)));
  };
  const future = kernel.requestExecute({ code, store_history: true, allow_stdin: false });
  future.onIOPub = (msg) => {
    const c = msg.content;
    switch (msg.header.msg_type) {
      case 'stream':
        add('stream', { 'text/plain': c.text });
        break;
      case 'error':
        add('error', { 'text/plain': `${c.ename}: ${c.evalue}` });
        break;
      case 'display_data':
      case 'execute_result':
        add(msg.header.msg_type, c.data, c.transient && c.transient.display_id);
        break;
      case 'update_display_data': {
        // Every output of this page with that display_id, in every cell.
        const id = c.transient && c.transient.display_id;
        document.querySelectorAll('.output').forEach((el) => {
          if (id && el.dataset.displayId === id) {
            const cn = Number(el.closest('.cell').dataset.n);
            const i = Array.prototype.indexOf.call(el.parentNode.children, el);
            const rec = state.cells[cn].outputs[i];
            rec.updates = (rec.updates || 0) + 1;
            pending.push(render(el, rec, c.data).catch((e) => log(`render: ${e}`)));
          }
        });
        break;
      }
      case 'clear_output':
        outs.textContent = '';
        cell.outputs = [];
        break;
    }
  };
  try {
    const reply = await future.done;
    cell.status = reply.content.status;
  } catch (e) {
    cell.status = 'failed: ' + e;
  }
  await Promise.all(pending);
  div.dataset.status = cell.status;
  cell.text = cell.outputs.map((o) => o.text).join('\n');
  return cell;
}

async function shutdown() {
  if (!kernel) {
    return;
  }
  const k = kernel;
  kernel = null;
  try {
    await KernelAPI.shutdownKernel(k.id, settings);
  } catch (e) {
    log(`shutdown: ${e}`);
  }
  k.dispose();
  state.ready = false;
  log('kernel shut down');
}

async function start() {
  const model = await KernelAPI.startNew({ name: kernelName }, settings);
  state.kernelId = model.id;
  kernel = new KernelConnection({
    model,
    serverSettings: settings,
    commsOverSubshells: CommsOverSubshells.Disabled,
  });
  manager = new Manager(kernel);
  // Messages are handled in order: a display that follows a comm_open waits
  // until its model exists.
  kernel.registerCommTarget('jupyter.widget', async (comm, msg) => {
    const st = (msg.content.data && msg.content.data.state) || {};
    state.comms.push({
      version: (msg.metadata && msg.metadata.version) || '',
      model: st._model_name || '',
      module: st._model_module || '',
      moduleVersion: st._model_module_version || '',
    });
    await manager.handle_comm_open(new shims.services.Comm(comm), msg);
  });
  const info = await kernel.info;
  log(`kernel ${model.id} (${kernelName}): ${info.implementation} ${info.implementation_version}`);
  state.ready = true;
}

// window.atune is what the test drives:
//   atune.state                  ready, error, kernelId, cells, comms, log
//   atune.execute(code)          a Promise of the cell's record
//   atune.shutdown()             shuts the kernel down (also done on unload)
window.atune = { state, execute, shutdown };

window.addEventListener('pagehide', () => {
  if (kernel) {
    // An ordinary request would not outlive the page.
    fetch(`${settings.baseUrl}api/kernels/${kernel.id}`, {
      method: 'DELETE',
      keepalive: true,
      headers: { Authorization: `token ${token}` },
    });
    kernel = null;
  }
});

start().catch((e) => {
  state.error = String(e && e.message ? e.message : e);
  log(`start: ${state.error}`);
});
