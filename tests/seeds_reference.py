"""Test-only reference code: the tutorial seeds, transcribed as given.

Transcribed from the seed files
``/work/shared/seeds/000_c919eb1bd6cfa72f.txt`` (``Self_Attention``, ``MultiHeadAttention``) and
``/work/shared/seeds/001_bf398a7e72995ae3.txt`` (``ScaledDotProductAttention``,
``MultiHeadAttention``, ``PoswiseFeedForwardNet``). They are the spec our modules are checked
against in ``tests/test_seeds.py``; they are NOT part of ``transformer_core``.

Faithful to the seeds, including their quirks:

* seed 000 blocks where ``mask == 0`` and fills with ``-inf`` (a fully masked row gives NaN),
  applies dropout after softmax, and returns ``norm(fc(concat) + q)``;
* seed 001 blocks where ``attn_mask`` is ``True``, fills with ``-1e9`` (a fully masked row
  gives uniform weights), divides by ``np.sqrt(d_k)`` with the GLOBAL ``d_k = 64`` whatever
  the tensors' width, and reads its sizes from the globals ``d_embedding``, ``n_heads``,
  ``d_k``, ``d_v`` (kept below exactly as in the seed).

Only changes: both seeds define a class named ``MultiHeadAttention``, so they are exported
here as ``MultiHeadAttention000`` and ``MultiHeadAttention001``; tab indentation became
spaces; the Chinese comments are shortened. Code lines are otherwise as in the seeds.
"""
import math

import numpy as np  # 导入numpy库
import torch  # 导入torch库
import torch.nn as nn  # 导入torch.nn库


# ----------------------------------------------------------------------------------------
# Seed 000 (000_c919eb1bd6cfa72f.txt)
# ----------------------------------------------------------------------------------------

# 自注意力机制
class Self_Attention(nn.Module):
    def __init__(self, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)  # 防止过拟合
        self.softmax = nn.Softmax(dim=-1)  # 转换为得分概率，归一化

    def forward(self, Q, K, V, mask=None):
        # Q, K: batch, heads, seq_len_q/k, d_k ; V: batch, heads, seq_len_v, d_v
        d_k = Q.size(-1)  # Q,K的d_k相等
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)

        if mask is not None:  # 如果mask不是None，为掩码注意力机制
            # mask==0（被屏蔽）的位置改为负无穷
            scores = scores.masked_fill(mask == 0, float('-inf'))

        attn = self.softmax(scores)

        attn = self.dropout(attn)  # 再次防止过拟合

        out = torch.matmul(attn, V)

        return out, attn


# 多头注意力机制
class MultiHeadAttention000(nn.Module):  # seed 000: ``MultiHeadAttention``
    def __init__(self,
                 d_model,
                 n_heads,
                 dropout=0.1):
        super().__init__()
        # d_model 需要能被n_head整除
        assert d_model % n_heads == 0

        self.d_k = d_model // n_heads

        self.n_heads = n_heads

        # 输入映射到 QKV三个向量
        self.W_Q = nn.Linear(d_model, d_model)

        self.W_K = nn.Linear(d_model, d_model)

        self.W_V = nn.Linear(d_model, d_model)

        self.fc = nn.Linear(d_model, d_model)  # 拼接后在映射回原来的d_model

        self.attention = Self_Attention(dropout)

        self.dropout = nn.Dropout(dropout)  # 防止过拟合

        self.norm = nn.LayerNorm(d_model)  # 残差后的层归一化

    def forward(self, Q, K, V, mask=None):
        batch_size = Q.size(0)
        q = Q
        # batch,seq_len,d_model -> batch,seq_len,n_heads,d_k -> batch,n_heads,seq_len,d_k
        Q = self.W_Q(Q).view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)

        K = self.W_K(K).view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)

        V = self.W_V(V).view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)

        # 计算注意力
        out, attn = self.attention(Q, K, V, mask)

        out = out.transpose(1, 2).contiguous().view(batch_size, -1, self.d_k * self.n_heads)
        out = self.fc(out)
        out = self.dropout(out)
        return self.norm(out + q), attn


# ----------------------------------------------------------------------------------------
# Seed 001 (001_bf398a7e72995ae3.txt) — note the module-level globals it depends on
# ----------------------------------------------------------------------------------------

d_k = 64  # K(=Q)维度
d_v = 64  # V维度


# 定义缩放点积注意力类
class ScaledDotProductAttention(nn.Module):
    def __init__(self):
        super(ScaledDotProductAttention, self).__init__()

    def forward(self, Q, K, V, attn_mask):
        # Q K V [batch_size, n_heads, len_q/k/v, dim_q=k/v]; attn_mask [batch_size, n_heads, len_q, len_k]
        # 计算注意力分数（原始权重）[batch_size, n_heads, len_q, len_k]
        scores = torch.matmul(Q, K.transpose(-1, -2)) / np.sqrt(d_k)
        # 使用注意力掩码，将attn_mask中值为1的位置的权重替换为极小值
        scores.masked_fill_(attn_mask, -1e9)
        # 用softmax函数对注意力分数进行归一化
        weights = nn.Softmax(dim=-1)(scores)
        # 计算上下文向量（也就是注意力的输出）
        context = torch.matmul(weights, V)
        return context, weights  # 返回上下文向量和注意力分数


# 定义多头自注意力类
d_embedding = 512  # Embedding的维度
n_heads = 8  # Multi-Head Attention中头的个数
batch_size = 3  # 每一批的数据大小


class MultiHeadAttention001(nn.Module):  # seed 001: ``MultiHeadAttention``
    def __init__(self):
        super(MultiHeadAttention001, self).__init__()
        self.W_Q = nn.Linear(d_embedding, d_k * n_heads)  # Q的线性变换层
        self.W_K = nn.Linear(d_embedding, d_k * n_heads)  # K的线性变换层
        self.W_V = nn.Linear(d_embedding, d_v * n_heads)  # V的线性变换层
        self.linear = nn.Linear(n_heads * d_v, d_embedding)
        self.layer_norm = nn.LayerNorm(d_embedding)

    def forward(self, Q, K, V, attn_mask):
        # Q K V [batch_size, len_q/k/v, embedding_dim]
        residual, batch_size = Q, Q.size(0)  # 保留残差连接
        # 将输入进行线性变换和重塑，以便后续处理
        q_s = self.W_Q(Q).view(batch_size, -1, n_heads, d_k).transpose(1, 2)
        k_s = self.W_K(K).view(batch_size, -1, n_heads, d_k).transpose(1, 2)
        v_s = self.W_V(V).view(batch_size, -1, n_heads, d_v).transpose(1, 2)
        # 将注意力掩码复制到多头 attn_mask: [batch_size, n_heads, len_q, len_k]
        attn_mask = attn_mask.unsqueeze(1).repeat(1, n_heads, 1, 1)
        # 使用缩放点积注意力计算上下文和注意力权重
        context, weights = ScaledDotProductAttention()(q_s, k_s, v_s, attn_mask)
        # 通过调整维度将多个头的上下文向量连接在一起
        context = context.transpose(1, 2).contiguous().view(batch_size, -1, n_heads * d_v)
        # 用一个线性层把连接后的多头自注意力结果转换，原始地嵌入维度
        output = self.linear(context)
        # 与输入(Q)进行残差连接，并进行层归一化后输出
        output = self.layer_norm(output + residual)
        return output, weights  # 返回层归一化的输出和注意力权重


# 定义逐位置前馈网络类
class PoswiseFeedForwardNet(nn.Module):
    def __init__(self, d_ff=2048):
        super(PoswiseFeedForwardNet, self).__init__()
        # 定义一维卷积层1，用于将输入映射到更高维度
        self.conv1 = nn.Conv1d(in_channels=d_embedding, out_channels=d_ff, kernel_size=1)
        # 定义一维卷积层2，用于将输入映射回原始维度
        self.conv2 = nn.Conv1d(in_channels=d_ff, out_channels=d_embedding, kernel_size=1)
        # 定义层归一化
        self.layer_norm = nn.LayerNorm(d_embedding)

    def forward(self, inputs):
        # inputs [batch_size, len_q, embedding_dim]
        residual = inputs  # 保留残差连接
        # 在卷积层1后使用ReLU函数
        output = nn.ReLU()(self.conv1(inputs.transpose(1, 2)))
        # output [batch_size, d_ff, len_q]
        # 使用卷积层2进行降维
        output = self.conv2(output).transpose(1, 2)
        # 与输入进行残差连接，并进行层归一化
        output = self.layer_norm(output + residual)
        return output  # 返回加入残差连接后层归一化的结果
