"""The Gradio UI: the app factory (app.build_app), the Plotly player component, and the decode runner."""
