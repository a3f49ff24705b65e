/* global window, SwaggerUIBundle */
'use strict';
// Starts Swagger UI on ../openapi.json, the document beside the page's docs/ (/openapi.json
// for /docs/interactive, /admin/openapi.json for /admin/docs/interactive), from a file, not
// an inline script: the page's Content-Security-Policy forbids inline scripts. With a
// plugin that fixes what axe-core reports of Swagger UI's own markup, through its component
// API (wrapComponents: our wrapper renders Swagger UI's component with other props or beside
// other elements) rather than by editing the DOM after a render, which the next render would
// undo. Colours are in a11y.css.
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '../openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    // every highlighting theme of Swagger UI has a colour under 4.5:1 on its background
    // (comments, numbers, doctype); plain text on the dark code block is legible
    syntaxHighlight: false,
    presets: [SwaggerUIBundle.presets.apis],
    plugins: [accessibleComponents],
    layout: 'BaseLayout',
  });
});

/** Text for screen readers only (a11y.css hides it from the eye, not from them). */
function hiddenText(h, text) {
  return h('span', { className: 'visually-hidden' }, text);
}

function accessibleComponents(system) {
  const React = system.React;
  const h = React.createElement;
  return {
    wrapComponents: {
      // a <select> of examples with "Examples:" beside it, not a label of it: a <label>
      // around the pair names the select
      ExamplesSelect: function (Original) {
        return function (props) {
          return h('label', { className: 'examples-select-label' }, hiddenText(h, 'Example '), h(Original, props));
        };
      },
      // the request body's editor ("Try it out") has no label
      TextArea: function (Original) {
        return function (props) {
          return h(Original, Object.assign({ 'aria-label': 'Request body' }, props));
        };
      },
      // deep links stay on (the address follows the open operation), but the path inside
      // an operation's summary button is not made a link: a link inside a button is a
      // control within a control, and too small a target
      OperationSummaryPath: function (Original) {
        return function (props) {
          return h(Original, Object.assign({}, props, { operationProps: props.operationProps.set('isDeepLinkingEnabled', false) }));
        };
      },
      // a schema's expand button shows only the schema's title, and nothing for one without
      JSONSchema202012Accordion: function (Original) {
        return function (props) {
          return h(Original, props, props.children, hiddenText(h, ' details'));
        };
      },
      // the close button of the Authorize dialog is this icon alone
      CloseIcon: function (Original) {
        return function (props) {
          return h(React.Fragment, null, h(Original, props), hiddenText(h, 'Close'));
        };
      },
      // a button that shows text is named by it (the dialog's "Authorize" was named
      // "Apply credentials", a name a voice-control user cannot guess)
      Button: function (Original) {
        return function (props) {
          return h(Original, typeof props.children === 'string' ? Object.assign({}, props, { 'aria-label': undefined }) : props);
        };
      },
      // the document names one server, this service ('/'): shown as text, not as a select
      // of one option that Swagger UI leaves without a name; with several, Swagger UI's own
      Servers: function (Original) {
        return function OneServer(props) {
          const only = props.servers.size === 1 ? props.servers.first() : null;
          const url = only === null ? null : only.get('url');
          React.useEffect(function () {
            if (url !== null && props.currentServer !== url) props.setSelectedServer(url);
          }, [url]);
          if (only === null) return h(Original, props);
          const description = only.get('description');
          return h('div', { className: 'servers' }, h('code', null, url), description ? ' (' + description + ')' : null);
        };
      },
    },
  };
}
